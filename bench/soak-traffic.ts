// The soak's traffic mix: the request kinds with their shares and expected statuses, and the shuffled request cycle.
import type { AutocannonRequest } from './soak-autocannon.js'
import { API_KEY, STATUSES, WRONG_KEY } from './soak-settings.js'

/** One kind of request and the only status it may get. */
export interface Kind {
  name: string
  expectedStatus: number
  /** Slots out of SLOTS in the request cycle. */
  slots: number
  requests: (slot: number) => Omit<AutocannonRequest, 'onResponse'>
}

/** Slots in one request cycle: a kind's `slots` is its share in percent. */
export const SLOTS = 100

/** The request kinds of the soak's mix; getPet reads the `seededIds` in turn. */
export function buildKinds(seededIds: readonly string[]): Kind[] {
  const authorized = { authorization: `Bearer ${API_KEY}` }
  const json = { 'content-type': 'application/json' }
  let created = 0
  let read = 0
  const newPet = () => {
    created++
    // Some categoryIds above 2^53, which the service must keep exact.
    const categoryId = created % 10 === 0 ? '9007199254740993' : String(created % 50)
    return `{"name":"soak-${created}","categoryId":${categoryId},"status":"${STATUSES[created % 3]}"}`
  }
  const limits = [1, 5, 20, 50, 100]
  return [
    {
      name: 'listPets',
      expectedStatus: 200,
      slots: 67,
      requests: (slot) => {
        const limit = limits[slot % limits.length]
        const status = [undefined, ...STATUSES][Math.floor(slot / limits.length) % 4]
        return { method: 'GET', path: `/v1/pets?limit=${limit}${status ? `&status=${status}` : ''}`, headers: authorized }
      },
    },
    {
      name: 'createPet',
      expectedStatus: 201,
      slots: 19,
      requests: () => ({
        method: 'POST',
        path: '/v1/pets',
        headers: { ...authorized, ...json },
        setupRequest: (request) => ({ ...request, body: newPet() }),
      }),
    },
    {
      name: 'getPet',
      expectedStatus: 200,
      slots: 10,
      requests: () => ({
        method: 'GET',
        path: '/v1/pets/1',
        headers: authorized,
        setupRequest: (request) => ({ ...request, path: `/v1/pets/${seededIds[read++ % seededIds.length]}` }),
      }),
    },
    { name: '401 no key', expectedStatus: 401, slots: 1, requests: () => ({ method: 'GET', path: '/v1/pets', headers: {} }) },
    {
      name: '401 wrong key',
      expectedStatus: 401,
      slots: 1,
      // A POST whose body the service never reads (auth fails first): the connection must stay usable.
      requests: () => ({
        method: 'POST',
        path: '/v1/pets',
        headers: { authorization: `Bearer ${WRONG_KEY}`, ...json },
        body: '{"name":"never stored","categoryId":1}',
      }),
    },
    {
      name: '400 invalid body',
      expectedStatus: 400,
      slots: 1,
      requests: () => ({
        method: 'POST',
        path: '/v1/pets',
        headers: { ...authorized, ...json },
        body: '{"categoryId":7,"colour":"red"}',
      }),
    },
    {
      name: '400 invalid query',
      expectedStatus: 400,
      slots: 1,
      requests: () => ({ method: 'GET', path: '/v1/pets?limit=0&status=lost', headers: authorized }),
    },
  ]
}

/** Per-kind counts and latencies, for one phase. */
export interface Tally {
  statuses: Map<number, number>
  latencies: number[]
}

/** Which tally a response counts in. */
export type Phase = 'warmup' | 'measured'

/** The request cycle: each kind in its number of slots, interleaved by a fixed shuffle so that every stretch mixes. */
export function cycle(kinds: Kind[]): Array<{ kind: Kind; slot: number }> {
  const slots = kinds.flatMap((kind) => Array.from({ length: kind.slots }, (_, slot) => ({ kind, slot })))
  if (slots.length !== SLOTS) throw new Error(`the mix has ${slots.length} slots, not ${SLOTS}`)
  let state = 0x5eed
  const random = () => {
    // mulberry32: a fixed sequence, so every run sends the same cycle.
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
  for (let index = slots.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1))
    const swap = slots[index]
    const with_ = slots[other]
    if (swap && with_) [slots[index], slots[other]] = [with_, swap]
  }
  return slots
}
