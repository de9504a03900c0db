// The README's example of the TypeScript client; clients/typescript/test/client-readme.test.ts and clients/typescript/test/client-package.test.ts run it against a live server.
import { AnimalStoreError, createClient } from '@animal-store/client'

const store = createClient({
  baseUrl: process.env.ANIMAL_STORE_URL ?? 'http://127.0.0.1:8080/v1',
  apiKey: process.env.ANIMAL_STORE_KEY, // exported in the curl step; createClient throws if it is unset
})
const rex = await store.createPet({ name: 'Rex', categoryId: 9007199254740993n }) // one Idempotency-Key, retried safely
console.log(rex.id, rex.categoryId) // bigints, exact: 2n 9007199254740993n (the curl step added pet 1)
for await (const pet of store.pets({ status: 'available' })) console.log(pet.id, pet.name) // every page, 100 per request
try {
  await store.listPets({ limit: 101 }, { timeoutMs: 5_000 }) // per call: { signal, timeoutMs, requestId, retries }
} catch (error) {
  if (!(error instanceof AnimalStoreError)) throw error // else NetworkError or AnimalStoreTimeoutError
  if (error.code === 'invalid_request') console.log(error.status, error.code, error.details, error.requestId) // 400 invalid_request [ …limit… ] and the X-Request-Id
}
