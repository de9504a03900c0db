// The package's public surface: the client, its errors and the types generated from openapi.json.
export {
  type AnimalStoreClient,
  type ApiPromise,
  type ClientOptions,
  type CreateOptions,
  createClient,
  DEFAULT_ITERATION_LIMIT,
  type ListQuery,
  type NewPet,
  type Pet,
  type PetPage,
  type PetStatus,
  type PetsQuery,
  type WithResponse,
} from './client.js'
export type { Conditional, ConditionalOptions } from './conditional.js'
export {
  AnimalStoreError,
  AnimalStoreTimeoutError,
  type ErrorBody,
  type ErrorCode,
  type ErrorDetail,
  type InvalidRequestError,
  NetworkError,
  type OtherAnimalStoreError,
} from './errors.js'
export type { components, operations, paths } from './generated/schema.js'
export type { CallOptions, RequestEvent, ResponseEvent, RetryEvent } from './transport.js'
