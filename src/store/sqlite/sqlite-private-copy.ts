// A backup read once: its bytes copied through one descriptor into a new private file beside the live
// database, which restore then checks and restores from, so a backup changed after it was read changes
// nothing (sqlite-backup.ts). The backup itself is never opened by SQLite.
import { constants, existsSync, statSync } from 'node:fs'
import { type FileHandle, open, rm } from 'node:fs/promises'

/** Mode of the private copy: owner only, as every file backup and restore create. */
const PRIVATE_COPY_MODE = 0o600

/** Bytes read and written per step of the copy. */
const COPY_CHUNK_BYTES = 1024 * 1024

/**
 * Copies the file at `sourcePath` into the new file `copyPath` (O_EXCL, PRIVATE_COPY_MODE: never an
 * existing file, readable by the owner alone), read once through one descriptor, up to the size it
 * had when opened (bytes appended later are not read); what the copy then holds is what restore
 * checks and restores. The source is opened non-blocking, so
 * a FIFO cannot hang the copy; it must be a regular file, and neither the live database at
 * `livePath` (the same file by device and inode: a hard or symbolic link to it), nor beside a
 * non-empty `-wal` or `-journal` (commits or a transaction the file alone lacks: SQLite is never
 * asked to read them). Throws an Error saying which, or the file system's; removes what it created.
 */
export async function copyOnce(sourcePath: string, copyPath: string, livePath: string): Promise<void> {
  let source: FileHandle
  try {
    source = await open(sourcePath, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`there is no file at ${sourcePath}`)
    throw error
  }
  try {
    const stat = await source.stat()
    if (!stat.isFile())
      throw new Error(`${sourcePath} is not a regular file (a folder, FIFO or device): restore reads a backup file`)
    const live = statSync(livePath, { throwIfNoEntry: false })
    if (live !== undefined && live.dev === stat.dev && live.ino === stat.ino)
      throw new Error(`${sourcePath} is the live database itself`)
    for (const suffix of ['-wal', '-journal']) {
      if (existsSync(sourcePath + suffix) && statSync(sourcePath + suffix).size > 0) {
        throw new Error(
          `${sourcePath}${suffix} is not empty: the backup's last commits or an unfinished transaction are there, not in the file; make backups with \`animal-store backup\`, or open the file once with sqlite3 and close it`,
        )
      }
    }
    await copyBytes(source, stat.size, copyPath)
  } finally {
    await source.close()
  }
}

async function copyBytes(source: FileHandle, size: number, copyPath: string): Promise<void> {
  let copy: FileHandle
  try {
    copy = await open(copyPath, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, PRIVATE_COPY_MODE)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new Error(`${copyPath} already exists (left by an interrupted restore?): remove it and restore again`)
    }
    throw error
  }
  try {
    const buffer = Buffer.allocUnsafe(COPY_CHUNK_BYTES)
    for (let position = 0; position < size; ) {
      const { bytesRead } = await source.read(buffer, 0, Math.min(COPY_CHUNK_BYTES, size - position), position)
      if (bytesRead === 0) break // the file shrank: the copy is what there was, and is checked as such
      // A write may take fewer bytes than asked: write the rest before reading on.
      for (let written = 0; written < bytesRead; )
        written += (await copy.write(buffer, written, bytesRead - written)).bytesWritten
      position += bytesRead
    }
  } catch (error) {
    await copy.close()
    await rm(copyPath, { force: true })
    throw error
  }
  await copy.close()
}
