// The contract's data shapes (docs/specification.md, Resources), as TypeBox schemas: the one source
// for request validation, TypeScript types, openapi.json and the Pet members (and their order) of the
// Pet and Pets bodies (store/pet-columns.ts, store/pet-sql.ts, store/pet-json.ts).
import { type Static, Type } from '@sinclair/typebox'
import type { Int64Text, Int64Value } from './int64.js'

/** Largest accepted request body, in bytes (docs/specification.md, Limits). */
export const BODY_LIMIT_BYTES = 16 * 1024

/**
 * A signed 64-bit integer (`type: integer, format: int64`). In requests it arrives as an Int64Value
 * (a number when safe, a bigint beyond ±(2^53−1)); the store returns Int64Text. See src/int64.ts.
 */
const Int64 = Type.Unsafe<Int64Value>({ type: 'integer', format: 'int64' })

/** PetStatus values (docs/specification.md, PetStatus). */
export const PET_STATUSES = ['available', 'pending', 'sold'] as const

/** PetStatus: the availability status (docs/specification.md, PetStatus). */
export const PetStatus = Type.Unsafe<(typeof PET_STATUSES)[number]>({
  $id: 'PetStatus',
  type: 'string',
  enum: [...PET_STATUSES],
  description: 'Availability status.',
})
export type PetStatus = Static<typeof PetStatus>

/** Default status on create (README, "Behaviour where the specification is silent"). */
export const DEFAULT_PET_STATUS: PetStatus = 'available'

// No NUL (PostgreSQL text cannot hold it) and no unpaired surrogate (not storable as UTF-8), so a
// name always reads back exactly as sent; at least one non-whitespace character. Ajv reads the
// pattern with the `u` flag; client generators copy it into a RegExp without it, and some decode
// every `\uXXXX` escape into the character itself (a lone surrogate then becomes U+FFFD on disk).
// So no escape names a surrogate, and each alternative means the right thing in both modes:
//   [\x01-\uD7FF\uE000-\uFFFF]  any BMP character but NUL and the surrogates (both modes);
//   [^\x00-\uFFFF]              u: a character beyond the BMP; without u: never matches;
//   (?!\u{D800}?)[…]{2}         without u: two surrogate code units (a pair); with u, `\u{D800}?`
//                               always matches, so the lookahead fails and a lone surrogate has no way in.
// Without `u` a run of two unpaired surrogates still passes (a generated check is then looser than
// the service, which answers 400); everything else is judged the same (test/api/openapi.test.ts).
/** The `name` pattern: the service's check and the one in openapi.json (see the comment above). */
export const NAME_PATTERN = String.raw`^(?!\s*$)(?:[\x01-\uD7FF\uE000-\uFFFF]|[^\x00-\uFFFF]|(?!\u{D800}?)[^\x00-\uD7FF\uE000-\uFFFF]{2})+$`

/** The longest `name`, in characters (Unicode code points). */
const NAME_MAX_LENGTH = 255

const PetName = Type.String({
  minLength: 1,
  maxLength: NAME_MAX_LENGTH,
  pattern: NAME_PATTERN,
  'x-pattern-message': 'must contain a character other than whitespace, and no NUL or unpaired surrogate',
  description:
    "The animal's name: 1 to 255 Unicode characters, at least one of them not whitespace, no NUL and no unpaired surrogate. Stored exactly as sent (no trimming); not unique.",
})

const CategoryId = Type.Unsafe<Int64Value>({
  ...Int64,
  description: 'Identifier of the category the animal belongs to (signed 64-bit integer, exact over the whole range).',
})

/** NewPet (docs/specification.md, NewPet): the createPet request body. Unknown fields are rejected (400). */
export const NewPet = Type.Object(
  {
    name: PetName,
    categoryId: CategoryId,
    status: Type.Optional(
      Type.Unsafe<PetStatus>({
        type: 'string',
        enum: [...PET_STATUSES],
        // No `default` keyword: generators (openapi-typescript) make a property with one required.
        description: 'Availability status (PetStatus); `available` when omitted.',
      }),
    ),
  },
  { $id: 'NewPet', additionalProperties: false, description: 'An animal to add. `id` is assigned by the service.' },
)
export type NewPet = Static<typeof NewPet>

/** A member of NewPet, the createPet body: every Pet member but the service-assigned `id`. */
export type NewPetMember = keyof typeof NewPet.properties

/** The NewPet members in the schema's order: what an insert writes (store/pet-sql.ts) and a fingerprint covers. */
export const NEW_PET_MEMBERS = Object.keys(NewPet.properties) as readonly NewPetMember[]

/** Pet (docs/specification.md, Pet): the response representation, NewPet plus the service-assigned `id`. */
export const Pet = Type.Object(
  {
    id: Type.Unsafe<Int64Text>({ ...Int64, description: 'Unique identifier assigned by the service on creation.' }),
    name: Type.String({ maxLength: NAME_MAX_LENGTH, description: "The animal's name, exactly as sent on creation." }),
    categoryId: Type.Unsafe<Int64Text>(CategoryId),
    status: Type.Unsafe<PetStatus>({ $ref: 'PetStatus' }),
  },
  { $id: 'Pet', additionalProperties: false, description: 'An animal held in the store.' },
)
export type Pet = Static<typeof Pet>

/** The page size when `limit` is absent (docs/specification.md, Limits). */
export const DEFAULT_PAGE_LIMIT = 20

/** The largest page `limit` accepts; larger values are a 400, never clamped (docs/specification.md, Limits). */
export const MAX_PAGE_LIMIT = 100

/** Pets (docs/specification.md, Pets): a bare JSON array of Pet, ordered by `id` ascending; a page holds at most MAX_PAGE_LIMIT. */
export const Pets = Type.Array(Type.Unsafe<Pet>({ $ref: 'Pet' }), {
  $id: 'Pets',
  maxItems: MAX_PAGE_LIMIT,
  description: 'Animals ordered by `id` ascending.',
})

/** listPets query (docs/specification.md, listPets and Pagination), with the keyset `cursor`. */
export const ListPetsQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_PAGE_LIMIT,
        default: DEFAULT_PAGE_LIMIT,
        description: `Maximum number of animals returned (1 to ${MAX_PAGE_LIMIT}). Out-of-range values are rejected, never clamped.`,
      }),
    ),
    status: Type.Optional(Type.Unsafe<PetStatus>({ $ref: 'PetStatus', description: 'Return only animals with this status.' })),
    cursor: Type.Optional(
      Type.String({
        format: 'cursor',
        minLength: 1,
        maxLength: 64,
        description:
          'Opaque keyset cursor from the `Link: <…>; rel="next"` header of the previous page. Absent for the first page.',
      }),
    ),
  },
  { additionalProperties: false },
)
export type ListPetsQuery = Static<typeof ListPetsQuery>

/** getPet path parameters. */
export const PetIdParams = Type.Object(
  { petId: Type.Unsafe<Int64Value>({ ...Int64, description: 'Identifier of the animal (signed 64-bit integer).' }) },
  { additionalProperties: false },
)
export type PetIdParams = Static<typeof PetIdParams>

/** The resource schemas registered with Fastify by `$id` (and so emitted as OpenAPI components). */
export const RESOURCE_SCHEMAS = [PetStatus, NewPet, Pet, Pets]
