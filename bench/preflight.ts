// The bench's preflight: one request of each kind to every target before any load, each status checked.
import type { ServerProcess } from './processes.js'
import { log } from './report.js'
import type { Scenario } from './scenarios.js'
import type { Workload } from './workload.js'

/** One request per kind, scenario and target before any load: checks each status, prints the body sizes. */
export async function preflight(
  cells: { scenario: Scenario; target: ServerProcess }[],
  workload: (scenario: Scenario) => Workload,
  authorization: string,
): Promise<void> {
  const sizes: string[] = []
  for (const { scenario, target } of cells) {
    for (const kind of workload(scenario).kinds) {
      const path = kind.idRange ? `${kind.paths[0]}${kind.idRange[1]}` : (kind.paths[0] as string)
      const response = await fetch(target.origin + path, {
        method: kind.method,
        headers: {
          ...(kind.authorized && { authorization }),
          ...(kind.body !== undefined && { 'content-type': 'application/json' }),
          ...(kind.acceptEncoding !== undefined && { 'accept-encoding': kind.acceptEncoding }),
        },
        ...(kind.body !== undefined && { body: kind.body }),
      })
      const bytes = (await response.arrayBuffer()).byteLength
      if (response.status !== kind.expectedStatus) {
        throw new Error(
          `preflight (${scenario.id}) ${kind.method} ${path} on ${target.name}: ${response.status}, expected ${kind.expectedStatus}`,
        )
      }
      sizes.push(`(${scenario.id}) ${target.name.split(' ')[1]} ${bytes} B`)
    }
  }
  log(`preflight: every status as expected; first response bodies: ${sizes.join(', ')}`)
}
