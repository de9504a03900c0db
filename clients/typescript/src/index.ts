// The package's public surface: the client, its error class and the types generated from openapi.json.
export {
  type AnimalStoreClient,
  type ClientOptions,
  type CreateOptions,
  createClient,
  type ListQuery,
  type NewPet,
  type Pet,
  type PetPage,
  type PetStatus,
  type RetryEvent,
} from './client.js'
export { AnimalStoreError, type ErrorBody, type ErrorCode, type ErrorDetail } from './errors.js'
export type { components, operations, paths } from './generated/schema.js'
