// The KV actor's client-facing type is defined once, in @heapless/client (so a client app needs no server package);
// the class implements it. These checks fail the type-check of the tests (tsconfig.check.json) when the two drift:
// a method exposed but missing from the interface, or an interface method the server does not expose.
import type { KvActor as KvActorMethods, KvStats, Remote } from '@heapless/client';
import type { OffHeapMapStats } from '@heapless/offheap';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { KvActor } from './kv-actor.js';

/** `T`'s fields as one object type, so that an interface and an intersection compare by their fields. */
type Fields<T> = { [K in keyof T]: T[K] };

describe('KvActor and the client interface', () => {
  it('names exactly the methods the actor exposes, with the same remote types', () => {
    expectTypeOf<(typeof KvActor.exposed)[number]>().toEqualTypeOf<keyof KvActorMethods>();
    expectTypeOf<Remote<typeof KvActor>>().toEqualTypeOf<Remote<KvActorMethods>>();
    // The client spells out the map's stats (it cannot import the server's packages): field for field the same.
    expectTypeOf<Fields<KvStats>>().toEqualTypeOf<Fields<OffHeapMapStats & { heapUsedBytes: number }>>();
    for (const name of KvActor.exposed) expect(typeof KvActor.prototype[name]).toBe('function');
  });
});
