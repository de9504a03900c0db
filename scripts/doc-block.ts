// Generated blocks inside hand-written Markdown: the text between `<!-- NAME:begin -->` and
// `<!-- NAME:end -->` belongs to a script; the rest of the file to people.

function markers(name: string): { begin: string; end: string } {
  return { begin: `<!-- ${name}:begin (generated: do not edit by hand) -->\n`, end: `<!-- ${name}:end -->` }
}

/** The text of block `name` in `document`. Throws when its markers are missing. */
export function readBlock(document: string, name: string): string {
  const { begin, end } = markers(name)
  const start = document.indexOf(begin)
  const stop = document.indexOf(end, start)
  if (start < 0 || stop < 0) throw new Error(`no "${name}" block (${begin.trim()} … ${end}) in the document`)
  return document.slice(start + begin.length, stop)
}

/** `document` with block `name` replaced by `content` (which should end with a line break). */
export function replaceBlock(document: string, name: string, content: string): string {
  const { begin, end } = markers(name)
  const old = readBlock(document, name)
  return document.replace(`${begin}${old}${end}`, () => `${begin}${content}${end}`)
}
