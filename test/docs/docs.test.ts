// The repository stands on its own: code and docs cite only what is in it (the two docs under docs/,
// the README, openapi.json and RFCs), every cited section exists, and docs/specification.md and
// docs/architecture.md agree with the code and biome.json they describe.
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { DEFAULT_ITERATION_LIMIT } from '../../clients/typescript/src/index.js'
import { DEPRECATION_HEADERS, SUNSET_DATE } from '../../src/http/routes/deprecation.js'
import { INTERFACE_VERSION } from '../../src/http/routes/openapi.js'
import { INT64_MAX, INT64_MIN } from '../../src/int64.js'
import {
  BODY_LIMIT_BYTES,
  DEFAULT_PAGE_LIMIT,
  ListPetsQuery,
  MAX_PAGE_LIMIT,
  NewPet,
  PET_STATUSES,
  Pet,
} from '../../src/schemas.js'

const root = new URL('../../', import.meta.url)
const read = (path: string) => readFileSync(new URL(path, root), 'utf8')

/** Every file under `folder` (repository-relative), recursively. */
function filesUnder(folder: string): string[] {
  return readdirSync(new URL(folder, root), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => `${entry.parentPath.slice(new URL(root).pathname.length)}/${entry.name}`.replace(/^\/+/, ''))
}

const CHECKED = [
  ...['src', 'test', 'bench', 'scripts', 'docs', 'deploy', '.ci'].flatMap(filesUnder),
  ...['README.md', 'biome.json', 'package.json', 'Dockerfile', 'compose.yaml', 'openapi.json'].filter((file) =>
    existsSync(new URL(file, root)),
  ),
]

// Citations of documents that are not in this repository. Each pattern is spelled so that it does
// not match its own source text (a character class around one letter).
const OUTSIDE_CITATIONS: Array<[RegExp, string]> = [
  [/\bS[P]EC\b/, 'the outside specification: cite docs/specification.md'],
  [/CONVENTION[S]/, 'the outside conventions: cite docs/architecture.md'],
  [/Hous[e] rules? #?\d/, 'a numbered house rule: cite docs/architecture.md by its heading'],
  [/\b[Tt]he issu[e]\b/, 'a reference to an issue: state the target or cite the doc that holds it'],
  [/\bissu[e][- ]\d/, 'an issue number: cite the doc that holds the decision'],
  [/share[d]\//, 'a folder outside the repository'],
]

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-')
}

/** The headings of a Markdown file, outside code blocks, without the `#`s. */
function headings(path: string): string[] {
  const text = read(path).replace(/^```[\s\S]*?^```/gm, '')
  return [...text.matchAll(/^#{1,6} (.+)$/gm)].map((match) => (match[1] as string).trim())
}

/** The rows of the first Markdown table after `heading` in `path`, as cells (header row dropped). */
function tableAfter(path: string, heading: string): string[][] {
  const text = read(path)
  const start = text.indexOf(`\n${heading}\n`)
  assert.ok(start >= 0, `${path} has a "${heading}" section`)
  const lines = text.slice(start).split('\n')
  const first = lines.findIndex((line) => line.startsWith('|'))
  const rows: string[][] = []
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break
    rows.push(
      line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim()),
    )
  }
  return rows
}

const codeSpans = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1] as string)

describe('the repository cites only itself', () => {
  it('has no citation of an outside specification or conventions, a numbered house rule, an issue or an outside folder', () => {
    const found: string[] = []
    for (const file of CHECKED) {
      for (const [n, line] of read(file).split('\n').entries()) {
        for (const [pattern, what] of OUTSIDE_CITATIONS) {
          if (pattern.test(line)) found.push(`${file}:${n + 1}: ${what}: ${line.trim().slice(0, 120)}`)
        }
      }
    }
    assert.deepEqual(found, [])
  })

  it('names only sections that exist when it cites docs/specification.md or docs/architecture.md by heading', () => {
    const known = {
      specification: new Set(headings('docs/specification.md').map((h) => h.replace(/^\d+\. /, ''))),
      architecture: new Set(headings('docs/architecture.md').map((h) => h.replace(/^\d+\. /, ''))),
    }
    const missing: string[] = []
    for (const file of CHECKED) {
      const text = read(file).replaceAll(/\n\s*(\/\/|\*)\s*/g, ' ')
      for (const match of text.matchAll(
        /docs\/(specification|architecture)\.md, ([A-Za-z0-9][\w ]*?)(?=[;:).,'"]| says| and |$)/gm,
      )) {
        const [, doc, section] = match as unknown as [string, 'specification' | 'architecture', string]
        if (!known[doc].has(section)) missing.push(`${file}: docs/${doc}.md, ${section}`)
      }
    }
    assert.deepEqual(missing, [])
  })

  it('links only to anchors that exist, within and between the docs and the README', () => {
    const anchors = new Map<string, Set<string>>()
    const anchorsOf = (path: string) => {
      if (!anchors.has(path)) anchors.set(path, new Set(headings(path).map(slug)))
      return anchors.get(path) as Set<string>
    }
    const broken: string[] = []
    for (const file of ['README.md', ...filesUnder('docs').filter((f) => f.endsWith('.md'))]) {
      const folder = file.includes('/') ? file.slice(0, file.lastIndexOf('/') + 1) : ''
      for (const [, target, anchor] of read(file).matchAll(/\]\(([^)#\s]*)#([^)\s]+)\)/g)) {
        const path = target
          ? new URL(target as string, new URL(folder, root)).pathname.slice(new URL(root).pathname.length)
          : file
        if (!path.endsWith('.md')) continue
        if (!existsSync(new URL(path, root)) || !anchorsOf(path).has(anchor as string))
          broken.push(`${file}: ${target}#${anchor}`)
      }
    }
    assert.deepEqual(broken, [])
  })
})

describe('the README', () => {
  it('names every Debian package scripts/install-test-tools.sh installs for the tests', () => {
    const list = /^required=\(([^)]*)\)/m.exec(read('scripts/install-test-tools.sh'))?.[1] ?? ''
    const packages = list.split(/\s+/).map((entry) => entry.split(':')[1])
    assert.ok(packages.length >= 6, `the script's list: ${list}`)
    const sentence = read('README.md').replaceAll(/\s+/g, ' ')
    const named = /installs with apt-get when missing \([^)]*\): ([^(]*)\(scripts\/install-test-tools\.sh\)/.exec(sentence)?.[1]
    assert.ok(named, 'the README says which programs `npm test` installs')
    for (const name of packages) assert.match(named, new RegExp(`\\b${name}\\b`), `README: ${name}`)
  })
})

describe('docs/specification.md', () => {
  const spec = read('docs/specification.md')

  it('states the interface version, the PetStatus values and the int64 range the code uses', () => {
    assert.match(spec, new RegExp(`version\\s+\\*\\*${INTERFACE_VERSION.replaceAll('.', '\\.')}\\*\\*`))
    for (const status of PET_STATUSES) assert.ok(spec.includes(`\`${status}\``), status)
    assert.ok(spec.includes(`−${-INT64_MIN}`) && spec.includes(String(INT64_MAX)), 'the int64 range')
  })

  it('states the page size and body limits the code enforces', () => {
    const { minimum, maximum, default: fallback } = ListPetsQuery.properties.limit
    assert.ok(spec.includes(`| Page size \`limit\` | listPets | ${minimum} to ${maximum}, default ${fallback} |`))
    assert.ok(spec.includes(`${BODY_LIMIT_BYTES / 1024} KiB (${BODY_LIMIT_BYTES} bytes)`))
  })

  it('states the page maximum and default wherever the README, the security doc and the client repeat them', () => {
    const stated: Array<[string, string]> = [
      ['README.md', `\`limit\` must be a plain decimal integer 1–${MAX_PAGE_LIMIT}`],
      ['README.md', `(\`0\`, \`${MAX_PAGE_LIMIT + 1}\`,`],
      ['README.md', `every page, ${DEFAULT_ITERATION_LIMIT} per request`],
      ['README.md', `(${DEFAULT_ITERATION_LIMIT} per request, resumable from a cursor)`],
      ['docs/security.md', `\`limit\` at most ${MAX_PAGE_LIMIT} per page`],
      // The reference apps run from a copy of their own files, without the service's modules.
      ['bench/references/contract.ts', `PAGE_LIMIT = { minimum: 1, maximum: ${MAX_PAGE_LIMIT}, default: ${DEFAULT_PAGE_LIMIT} }`],
      ['clients/typescript/src/client.ts', `\`limit\` (1–${MAX_PAGE_LIMIT}; the service's ${DEFAULT_PAGE_LIMIT} when omitted)`],
      ['clients/typescript/src/client.ts', `\`limit\` is ${DEFAULT_ITERATION_LIMIT} per request unless given`],
    ]
    for (const [file, text] of stated) assert.ok(read(file).includes(text), `${file} states: ${text}`)
    // The client asks for the most a page may hold.
    assert.equal(DEFAULT_ITERATION_LIMIT, MAX_PAGE_LIMIT)
  })

  it('lists exactly the members of the NewPet and Pet schemas, in their order', () => {
    for (const [heading, schema] of [
      ['### NewPet', NewPet],
      ['### Pet', Pet],
    ] as const) {
      const fields = tableAfter('docs/specification.md', heading).map(([field = '']) => field.replaceAll('`', ''))
      assert.deepEqual(fields, Object.keys(schema.properties), heading)
      const required = tableAfter('docs/specification.md', heading).map(([, , yes]) => yes === 'yes')
      assert.deepEqual(
        required,
        Object.keys(schema.properties).map((member) => ((schema.required ?? []) as string[]).includes(member)),
        `${heading}: the Required column`,
      )
    }
  })

  it('states the deprecation headers getPet sends', () => {
    const deprecation = /`(@\d+)`/.exec(DEPRECATION_HEADERS.Deprecation.description)?.[1]
    assert.ok(deprecation)
    assert.ok(spec.includes(`| \`Deprecation\` | \`${deprecation}\``), 'Deprecation')
    assert.ok(spec.includes(`| \`Sunset\` | \`${SUNSET_DATE}\``), 'Sunset')
    assert.ok(spec.includes('| `Link` | `</v1/pets>; rel="successor-version"`'), 'Link')
  })

  it('links the README for the error catalog and the decisions instead of repeating them', () => {
    assert.ok(spec.includes('(../README.md#error-catalog)'))
    assert.ok(spec.includes('(../README.md#behaviour-where-the-specification-is-silent)'))
    assert.ok(!/`invalid_json`.*\|.*400/.test(spec), 'no catalog rows of its own')
  })
})

describe('docs/architecture.md', () => {
  it('lists exactly the import restrictions biome.json enforces', () => {
    type Override = { includes: string[]; linter?: { rules?: { style?: Record<string, any> } } }
    const biome = JSON.parse(read('biome.json')) as { overrides: Override[] }
    const enforced = biome.overrides
      .filter((override) => override.linter?.rules?.style?.noRestrictedImports)
      .map((override) => {
        const { paths = {}, patterns = [] } = override.linter?.rules?.style?.noRestrictedImports.options ?? {}
        const banned = [...Object.keys(paths), ...patterns.flatMap((pattern: { group: string[] }) => pattern.group)]
        return `${override.includes.join(', ')} → ${banned.sort().join(', ')}`
      })
    const documented = tableAfter('docs/architecture.md', '## Import rules').map(
      ([files = '', banned = '']) => `${codeSpans(files).join(', ')} → ${codeSpans(banned).sort().join(', ')}`,
    )
    assert.deepEqual(documented.sort(), enforced.sort())
  })

  it('says which files may read the environment as biome.json does', () => {
    const biome = read('biome.json')
    assert.match(
      biome,
      /"includes": \["src\/\*\*", "!src\/config\.ts"\],\s*"linter": \{\s*"rules": \{\s*"style": \{\s*"noProcessEnv": "error"/,
    )
    assert.match(read('docs/architecture.md'), /`noProcessEnv` for `src\/\*\*` except `src\/config\.ts`/)
  })

  it('maps every file in src/ to its concern, and names no file that does not exist', () => {
    const listed = new Set(
      tableAfter('docs/architecture.md', '## Where each concern lives').flatMap(([, file = '']) => codeSpans(file)),
    )
    const actual = new Set(filesUnder('src').filter((file) => file.endsWith('.ts')))
    // A folder (`src/store/migrations/`) stands for every file in it.
    const folders = [...listed].filter((span) => span.endsWith('/'))
    for (const folder of folders) listed.delete(folder)
    assert.deepEqual(
      folders.filter((folder) => ![...actual].some((file) => file.startsWith(folder))),
      [],
      'folders in the table that hold no file',
    )
    assert.deepEqual(
      [...actual].filter((file) => !listed.has(file) && !folders.some((folder) => file.startsWith(folder))),
      [],
      'files in src/ missing from the table',
    )
    assert.deepEqual(
      [...listed].filter((file) => !actual.has(file)),
      [],
      'files in the table that do not exist',
    )
  })
})
