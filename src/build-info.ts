// What build is running: the service's version (package.json) and Node.js's, for the build-info
// metric and the `service.version` of traces.
import { createRequire } from 'node:module'

/** The service's version, as package.json gives it (`1.0.0`). */
export const SERVICE_VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version

/** The Node.js version running the service, without its `v` (`24.21.0`). */
export const NODE_VERSION: string = process.versions.node
