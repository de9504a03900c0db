// The examples of the OpenAPI document, by operationId: a request body for createPet and a response
// body for each success; and the Error body of each catalog code, for every error status. int64 values beyond 2^53 are LosslessNumber, so the document carries their
// exact digits (JSON.stringify would round them) and shows a client what it must keep.
import { LosslessNumber } from 'lossless-json'
import { MAX_PAGE_LIMIT, Pet } from '../../schemas.js'
import { ERROR_CODES, type ErrorBody, type ErrorCode } from '../errors.js'

/** OpenAPI Example Objects by name. */
export type Examples = Record<string, { summary: string; value: unknown }>

/** One operation's examples: its request body's, and its responses' by status. */
export interface OperationExamples {
  requestBody?: Examples
  responses: Record<number, Examples>
}

const BEYOND_2_53 = new LosslessNumber('9007199254740993')
const INT64_MAX = new LosslessNumber('9223372036854775807')
// A Pet example holds every member of the schema, in its order; a member not given here (one added
// to Pet later, optional in NewPet) is shown as null, as the database renders an absent value.
const pet = (given: Record<string, unknown>) =>
  Object.fromEntries(Object.keys(Pet.properties).map((member) => [member, given[member] ?? null]))
const REX = pet({ id: 1, name: 'Rex', categoryId: 3, status: 'available' })
const TOM = pet({ id: BEYOND_2_53, name: 'Tom', categoryId: INT64_MAX, status: 'sold' })
const EXACT = 'Its int64 values are beyond 2^53: read them with a JSON parser that keeps every digit, not JSON.parse.'

/** The examples of each operation, keyed by operationId. */
export const OPERATION_EXAMPLES: Record<string, OperationExamples> = {
  listPets: {
    responses: {
      200: {
        page: { summary: `A page of two animals. ${EXACT}`, value: [REX, TOM] },
        empty: { summary: 'No animals (or none with that status).', value: [] },
      },
    },
  },
  createPet: {
    requestBody: {
      minimal: { summary: 'An animal; `status` defaults to `available`.', value: { name: 'Rex', categoryId: 3 } },
      exact: { summary: `${EXACT} Send them as bare digits.`, value: { name: 'Tom', categoryId: INT64_MAX, status: 'sold' } },
      beyond2to53: {
        summary:
          'categoryId 2^53+1, the first integer JSON.parse changes into another valid one (2^53): a client that rounds it gets a 201 for an animal it did not send. Send it as bare digits.',
        value: { name: 'Ada', categoryId: BEYOND_2_53 },
      },
    },
    responses: { 201: { added: { summary: `The animal as stored, with its id. ${EXACT}`, value: TOM } } },
  },
  getPet: {
    responses: { 200: { found: { summary: `One animal. ${EXACT}`, value: TOM } } },
  },
}

const DETAILS_EXAMPLE: NonNullable<ErrorBody['details']> = [
  { in: 'query', field: 'limit', message: `must be <= ${MAX_PAGE_LIMIT}` },
]

/**
 * The examples of an error response with `status`: one per catalog code with that status, each the
 * body the service sends (its code, default message and status; `invalid_request` with `details`).
 * Without them, documentation pages invent one from the schema (the first code of the enum).
 */
export function errorExamples(status: number): Examples {
  const examples: Examples = {}
  for (const [code, { message }] of Object.entries(ERROR_CODES) as [ErrorCode, { status: number; message: string }][]) {
    if (ERROR_CODES[code].status !== status) continue
    const value: ErrorBody = { code, message, status }
    if (code === 'invalid_request') value.details = DETAILS_EXAMPLE
    examples[code] = { summary: `\`${code}\``, value }
  }
  return examples
}
