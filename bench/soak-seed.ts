// Seeding the soak's service over HTTP before the load: pets created through POST /v1/pets.
import { API_KEY, REQUEST_TIMEOUT_S, SEED_CONCURRENCY, SEED_PETS, STATUSES } from './soak-settings.js'

/** Creates SEED_PETS pets (SEED_CONCURRENCY at a time); resolves to their ids (exact digits). */
export async function seed(origin: string): Promise<string[]> {
  const ids: string[] = []
  let next = 0
  const worker = async () => {
    while (next < SEED_PETS) {
      const index = next++
      const response = await fetch(`${origin}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `seed-${index}`, categoryId: index % 7, status: STATUSES[index % 3] }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_S * 1000),
      })
      const text = await response.text()
      const id = /"id":(\d+)/.exec(text)?.[1]
      if (response.status !== 201 || id === undefined)
        throw new Error(`seeding: POST /v1/pets answered ${response.status} ${text}`)
      ids.push(id)
    }
  }
  await Promise.all(Array.from({ length: SEED_CONCURRENCY }, worker))
  return ids
}
