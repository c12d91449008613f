import { describe, expect, it } from 'vitest';
import { FrameDecoder } from '../protocol/frame-decoder.js';
import { FrameEncoder } from '../protocol/frame-encoder.js';
import { HeaplessError } from '../protocol/heapless-error.js';
import { array, struct, utf8 } from '../struct/struct-layout.js';
import {
  Collection,
  collection,
  type KvRemote,
  type KvScanOptions,
  type KvScanPage,
  msgpackCodec,
  StructCollection,
} from './collection.js';

/**
 * A KV server in memory whose answers travel as real reply frames: each result is encoded into a frame and decoded
 * back, so bytes reach the collection as views of one received frame, as they do over a socket. `frames` keeps
 * every reply frame's buffer, `sets` every value sent.
 */
class FrameKv implements KvRemote {
  readonly data = new Map<string, Uint8Array>();
  readonly frames: ArrayBufferLike[] = [];
  readonly sets: Uint8Array[] = [];
  readonly scans: KvScanOptions[] = [];
  readonly #enc = new FrameEncoder();
  readonly #dec = new FrameDecoder();

  #reply<T>(result: T): T {
    const frame = this.#enc.encodeDetached([[1, result]]);
    const copy = new Uint8Array(frame); // the "received" frame, in a buffer of its own
    this.frames.push(copy.buffer);
    return this.#dec.decodeReplies(copy)[0]![1] as T;
  }

  async get(key: string) {
    return this.#reply(this.data.get(key));
  }
  async getMany(keys: string[]) {
    return this.#reply(keys.map((k) => this.data.get(k)));
  }
  async set(key: string, value: Uint8Array) {
    this.sets.push(value);
    this.data.set(key, Uint8Array.from(value));
  }
  async delete(key: string) {
    return this.data.delete(key);
  }
  async has(key: string) {
    return this.data.has(key);
  }
  async scan(opts: KvScanOptions): Promise<KvScanPage> {
    this.scans.push(opts);
    const keys = [...this.data.keys()]
      .filter((k) => k.startsWith(opts.prefix ?? ''))
      .filter((k) => (opts.gte === undefined || k >= opts.gte) && (opts.lt === undefined || k < opts.lt))
      .filter((k) => opts.cursor === undefined || k > opts.cursor)
      .sort();
    const limit = opts.limit ?? 100;
    const page = keys.slice(0, limit);
    return this.#reply({
      entries: page.map((k) => [k, this.data.get(k)!] as [string, Uint8Array]),
      cursor: keys.length > limit ? page[page.length - 1] : undefined,
    });
  }
}

const User = struct({ id: 'u32', name: utf8(16), friends: array('u32', 4), balance: 'i64' });

async function rejection(p: Promise<unknown>): Promise<HeaplessError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(HeaplessError);
  return e as HeaplessError;
}

describe('collection(kv, prefix, { struct })', () => {
  it('sends the layout’s bytes once, under prefix + id', async () => {
    const kv = new FrameKv();
    const users = collection(kv, 'user:', { struct: User });
    expect(users).toBeInstanceOf(StructCollection);
    await users.set('1', { id: 1, name: 'ada', friends: [2, 3], balance: -5n });
    expect([...kv.data.keys()]).toEqual(['user:1']);
    expect(kv.sets[0]).toEqual(User.encode({ id: 1, name: 'ada', friends: [2, 3], balance: -5n }));
  });

  it('get answers a view over the received frame: no copy, no decode', async () => {
    const kv = new FrameKv();
    const users = collection(kv, 'user:', { struct: User });
    await users.set('1', { id: 1, name: 'ada', friends: [2, 3], balance: -5n });
    const u = await users.get('1');
    expect(u).toBeDefined();
    if (u === undefined) return;
    expect(User.bytesOf(u).buffer).toBe(kv.frames.at(-1));
    expect(u.key).toBe('1');
    expect([u.id, u.name, u.friends.get(1), u.balance]).toEqual([1, 'ada', 3, -5n]);
    expect(u.toObject()).toEqual({ id: 1, name: 'ada', friends: [2, 3, 0, 0], balance: -5n });
    expect(await users.get('2')).toBeUndefined();
  });

  it('getMany answers one view per hit, all over one frame and one DataView', async () => {
    const kv = new FrameKv();
    const users = collection(kv, 'user:', { struct: User });
    for (const i of [1, 2, 3]) await users.set(String(i), { id: i, name: `u${i}`, friends: [], balance: BigInt(i) });
    const got = await users.getMany(['3', 'none', '1']);
    expect(got.map((u) => u?.name)).toEqual(['u3', undefined, 'u1']);
    expect(got.map((u) => u?.key)).toEqual(['3', undefined, '1']);
    const [a, , b] = got;
    expect(User.bytesOf(a!).buffer).toBe(kv.frames.at(-1));
    expect(a!._dv).toBe(b!._dv);
  });

  it('set(id, view) sends the view’s bytes as they are (read, change a field, write back)', async () => {
    const kv = new FrameKv();
    const users = collection(kv, 'user:', { struct: User });
    await users.set('1', { id: 1, name: 'ada', friends: [2], balance: 0n });
    const u = (await users.get('1'))!;
    u.balance = 100n;
    u.friends.set(1, 7);
    await users.set('1', u);
    expect(kv.sets.at(-1)!.buffer).toBe(User.bytesOf(u).buffer); // not re-encoded
    expect((await users.get('1'))!.toObject()).toEqual({ id: 1, name: 'ada', friends: [2, 7, 0, 0], balance: 100n });
    const fresh = User.view();
    fresh.id = 5;
    await users.set('5', fresh);
    expect((await users.get('5'))!.id).toBe(5);
  });

  it('refuses a stored value of another size with STRUCT_SIZE_MISMATCH naming the key', async () => {
    const kv = new FrameKv();
    kv.data.set('user:x', new Uint8Array(3));
    const users = collection(kv, 'user:', { struct: User });
    const e = await rejection(users.get('x'));
    expect(e.code).toBe('STRUCT_SIZE_MISMATCH');
    expect(e.message).toContain('"user:x"');
    expect((await rejection(users.getMany(['x']))).code).toBe('STRUCT_SIZE_MISMATCH');
  });

  it('refuses a value that does not fit before sending anything', async () => {
    const kv = new FrameKv();
    const users = collection(kv, 'user:', { struct: User });
    const long = { id: 1, name: 'x'.repeat(17), friends: [], balance: 0n };
    expect((await rejection(users.set('1', long))).code).toBe('STRUCT_FIELD_OVERFLOW');
    expect((await rejection(users.set('1', { ...long, name: 1 } as never))).code).toBe('STRUCT_INVALID_VALUE');
    expect(kv.sets).toEqual([]);
  });

  it('scans ids in pages: prefix, bounds and cursor in ids, views over the page’s frame', async () => {
    const kv = new FrameKv();
    kv.data.set('other:1', new Uint8Array(1));
    const users = collection(kv, 'user:', { struct: User });
    for (const i of [1, 2, 3, 4, 5]) await users.set(`${i}`, { id: i, name: `u${i}`, friends: [], balance: 0n });
    const p1 = await users.scan({ limit: 2, gte: '2' });
    expect(p1.entries.map(([id, v]) => [id, v.id, v.key])).toEqual([
      ['2', 2, '2'],
      ['3', 3, '3'],
    ]);
    expect(p1.cursor).toBe('3');
    expect(User.bytesOf(p1.entries[0]![1]).buffer).toBe(kv.frames.at(-1));
    expect(kv.scans.at(-1)).toEqual({ prefix: 'user:', gte: 'user:2', lt: undefined, limit: 2, cursor: undefined });
    const p2 = await users.scan({ limit: 2, gte: '2', lt: '5', cursor: p1.cursor });
    expect(p2.entries.map(([id]) => id)).toEqual(['4']);
    expect(p2.cursor).toBeUndefined();
    expect(kv.scans.at(-1)).toMatchObject({ lt: 'user:5', cursor: 'user:3' });
  });

  it('deletes and answers has', async () => {
    const kv = new FrameKv();
    const users = collection(kv, 'user:', { struct: User });
    await users.set('1', { id: 1, name: '', friends: [], balance: 0n });
    expect(await users.has('1')).toBe(true);
    expect(await users.delete('1')).toBe(true);
    expect(await users.has('1')).toBe(false);
  });

  it('refuses a codec and a struct together, or a layout that is not the client’s', () => {
    const kv = new FrameKv();
    const both = () => collection(kv, 'u:', { struct: User, codec: msgpackCodec() } as never);
    expect(both).toThrow(/either a codec or a struct layout/);
    expect(() => collection(kv, 'u:', { struct: { fields: {} } as never })).toThrow(/struct layout/);
  });
});

describe('collection(kv, prefix, { codec })', () => {
  it('encodes with msgpack by default and scans decoded values', async () => {
    const kv = new FrameKv();
    const things = collection<{ n: number }>(kv, 't:');
    expect(things).toBeInstanceOf(Collection);
    await things.set('a', { n: 1 });
    await things.set('b', { n: 2 });
    expect(await things.get('a')).toEqual({ n: 1 });
    expect(await things.getMany(['b', 'z'])).toEqual([{ n: 2 }, undefined]);
    expect(await things.scan()).toEqual({
      entries: [
        ['a', { n: 1 }],
        ['b', { n: 2 }],
      ],
      cursor: undefined,
    });
  });

  it('uses the codec it is given', async () => {
    const kv = new FrameKv();
    const text = collection<string>(kv, 's:', {
      codec: { encode: (s) => new TextEncoder().encode(s), decode: (b) => new TextDecoder().decode(b) },
    });
    await text.set('1', 'héllo');
    expect([...kv.data.get('s:1')!]).toEqual([...new TextEncoder().encode('héllo')]);
    expect(await text.get('1')).toBe('héllo');
  });

  it('rejects scan with UNKNOWN_METHOD when the ref has none', async () => {
    const kv = new FrameKv();
    const bare: KvRemote = {
      get: (k) => kv.get(k),
      getMany: (k) => kv.getMany(k),
      set: (k, v) => kv.set(k, v),
      delete: (k) => kv.delete(k),
      has: (k) => kv.has(k),
    };
    expect((await rejection(collection(bare, 'x:').scan())).code).toBe('UNKNOWN_METHOD');
  });
});

describe('collection keys', () => {
  it('refuses ids and prefixes with a lone surrogate with BAD_ARGUMENTS, sending nothing', async () => {
    const kv = new FrameKv();
    const things = collection<number>(kv, 't:');
    await things.set('\ufffd', 1); // the replacement character itself is an ordinary id
    for (const bad of ['\ud800', 'a\udc00', '\ud83d']) {
      expect((await rejection(things.set(bad, 2))).code).toBe('BAD_ARGUMENTS');
      expect((await rejection(things.get(bad))).code).toBe('BAD_ARGUMENTS');
      expect((await rejection(things.getMany(['ok', bad]))).code).toBe('BAD_ARGUMENTS');
      expect((await rejection(things.has(bad))).code).toBe('BAD_ARGUMENTS');
      expect((await rejection(things.delete(bad))).code).toBe('BAD_ARGUMENTS');
      expect((await rejection(things.scan({ gte: bad }))).code).toBe('BAD_ARGUMENTS');
      expect((await rejection(things.scan({ cursor: bad }))).code).toBe('BAD_ARGUMENTS');
    }
    expect([...kv.data.keys()]).toEqual(['t:\ufffd']);
    expect(kv.scans).toEqual([]);
    expect(() => collection(kv, 'p\udbff')).toThrow(expect.objectContaining({ code: 'BAD_ARGUMENTS' }));
    expect(await things.get('😀')).toBeUndefined(); // a pair is fine
  });
});
