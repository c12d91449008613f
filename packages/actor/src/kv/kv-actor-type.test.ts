// The KV actor's client-facing type is defined once, in @heapless/client (so a client app needs no server package);
// the class implements it. These checks fail the type-check of the tests (tsconfig.check.json) when the two drift:
// a method exposed but missing from the interface, or an interface method the server does not expose.
import type { KvActor as KvActorMethods, Remote } from '@heapless/client';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { KvActor } from './kv-actor.js';

describe('KvActor and the client interface', () => {
  it('names exactly the methods the actor exposes, with the same remote types', () => {
    expectTypeOf<(typeof KvActor.exposed)[number]>().toEqualTypeOf<keyof KvActorMethods>();
    expectTypeOf<Remote<typeof KvActor>>().toEqualTypeOf<Remote<KvActorMethods>>();
    for (const name of KvActor.exposed) expect(typeof KvActor.prototype[name]).toBe('function');
  });
});
