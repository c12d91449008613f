import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { type CallTarget, remoteRef } from './remote-ref.js';

/** A call target that records every call (none should come from looking at the ref). */
function target(methods: string[] | null) {
  const calls: string[] = [];
  const t: CallTarget = {
    url: 'ws://127.0.0.1:7070/v1/ws',
    methods: methods === null ? null : new Set(methods),
    call: async (method, args) => {
      calls.push(method);
      return [method, args];
    },
    close: async () => {},
  };
  return { t, calls };
}

type Loose = Record<string | symbol, unknown>;

describe('a client ref', () => {
  it('is not a thenable: awaiting it gives the ref itself', async () => {
    const { t, calls } = target(['get']);
    const ref = remoteRef<Loose>(t);
    expect(ref.then).toBeUndefined();
    expect(await Promise.resolve(ref)).toBe(ref);
    expect(await (async () => ref)()).toBe(ref);
    expect(calls).toEqual([]);
  });

  it('logs, prints and serialises as a description, without calling anything', () => {
    const { t, calls } = target(['get', 'set']);
    const ref = remoteRef<Loose>(t);
    expect(JSON.stringify({ kv: ref })).toBe(
      '{"kv":{"heaplessRef":"ws://127.0.0.1:7070/v1/ws","methods":["get","set"]}}',
    );
    expect(inspect(ref)).toBe('HeaplessRef <ws://127.0.0.1:7070/v1/ws> { get, set }');
    expect(inspect({ kv: ref })).toContain('HeaplessRef <ws://127.0.0.1:7070/v1/ws>');
    expect(String(ref)).toBe('[HeaplessRef ws://127.0.0.1:7070/v1/ws]');
    expect(`${ref}`).toBe('[HeaplessRef ws://127.0.0.1:7070/v1/ws]');
    expect(Object.prototype.toString.call(ref)).toBe('[object HeaplessRef]');
    expect(calls).toEqual([]);
  });

  it('answers probes with undefined: only the server’s methods are calls', async () => {
    const { t, calls } = target(['get']);
    const ref = remoteRef<Loose>(t);
    for (const probe of ['$$typeof', 'nodeType', 'asymmetricMatch', 'catch', 'constructor', 'valueOf', 'set', 'x']) {
      expect(ref[probe], probe).toBeUndefined();
    }
    for (const probe of [Symbol.toPrimitive, Symbol.iterator, Symbol.asyncIterator]) expect(ref[probe]).toBeUndefined();
    expect('get' in ref).toBe(true);
    expect('set' in ref).toBe(false);
    expect(typeof ref.get).toBe('function');
    expect(ref.get).toBe(ref.get); // made once per name
    expect(await (ref.get as (k: string) => Promise<unknown>)('k')).toEqual(['get', ['k']]);
    expect(calls).toEqual(['get']);
  });

  it('without a method list (HTTP), calls any name an actor method can have, and nothing else', async () => {
    const { t, calls } = target(null);
    const ref = remoteRef<Loose>(t);
    expect(typeof ref.anyMethod).toBe('function');
    expect(typeof ref.get_many2).toBe('function');
    for (const probe of ['$$typeof', '@@iterator', '__proto__', '_private', 'then', 'nodeType', '1a', '']) {
      expect(ref[probe], probe).toBeUndefined();
    }
    expect(JSON.stringify(ref)).toBe('{"heaplessRef":"ws://127.0.0.1:7070/v1/ws","methods":null}');
    await (ref.anyMethod as () => Promise<unknown>)();
    expect(calls).toEqual(['anyMethod']);
  });
});
