// What the service takes from node:http, loaded with require rather than an ES import. An ES import
// of a built-in module builds its ES facade, which reads every export, and node:http's WebSocket,
// CloseEvent and MessageEvent are getters that load undici (Node's fetch) to answer: 25 ms of a
// profiled `serve` start for code the service never runs (docs/architecture.md, Tests drive the real thing).
// Types still come from `import type … from 'node:http'`, which loads nothing.
import { createRequire } from 'node:module'

const http = createRequire(import.meta.url)('node:http') as typeof import('node:http')

/** node:http's `createServer`, `maxHeaderSize` (bytes) and `STATUS_CODES`, as Node documents them. */
export const { createServer, maxHeaderSize, STATUS_CODES } = http
