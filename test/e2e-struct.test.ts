/**
 * Struct collections end to end: a real KvActor published over WebSocket, the client's `collection(kv, prefix,
 * { struct })`. The server stores the records as the client laid them out, byte for byte, so a server-side
 * `OffHeapMap` with the same layout reads them through its own views, and the client reads what the server wrote.
 */
import { KvActor, publish, spawn } from '@heapless/actor';
import { array, collection, connect, HeaplessError, struct, utf8 } from '@heapless/client';
import { connect as connectBrowser, httpClient } from '@heapless/client/browser';
import * as offheap from '@heapless/offheap';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

const fields = {
  id: 'u32',
  name: utf8(24),
  friends: array('u32', 8),
  balance: 'i64',
  score: 'f64',
  active: 'bool',
} as const;
const User = struct(fields);
const ServerUser = offheap.struct(fields as never);

type Server = { published: Awaited<ReturnType<typeof publish>>; ref: ReturnType<typeof spawn<KvActor>> };

async function serve(map: offheap.OffHeapMap<string, unknown>): Promise<Server> {
  const ref = spawn(new KvActor(map, { persistent: false }));
  return { published: await publish(ref), ref };
}

async function stop(s: Server): Promise<void> {
  await s.published.close();
  await s.ref.stop();
}

async function rejection(p: Promise<unknown>): Promise<HeaplessError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(HeaplessError);
  return e as HeaplessError;
}

describe('struct collection over a KvActor whose map has the same struct layout', () => {
  const map = new offheap.OffHeapMap<string, Record<string, unknown>, typeof ServerUser.fields>({
    struct: ServerUser,
    threads: 1,
  });
  let server: Server;
  let kv: Awaited<ReturnType<typeof connect<typeof KvActor>>>;
  beforeAll(async () => {
    server = await serve(map as unknown as offheap.OffHeapMap<string, unknown>);
    kv = await connect<typeof KvActor>(server.published.url);
  });
  afterAll(async () => {
    await kv.close();
    await stop(server);
  });

  it('round-trips records through the server untouched', async () => {
    const users = collection(kv, 'user:', { struct: User });
    const ada = { id: 1, name: 'Ada Lovelace ✓', friends: [2, 3], balance: -(2n ** 63n), score: 0.1, active: true };
    await users.set('1', ada);
    // The server holds exactly the bytes the client laid out, and reads them with its own views.
    const stored = map.getBytes('user:1')!;
    expect(Buffer.from(stored).equals(Buffer.from(User.encode(ada)))).toBe(true);
    const sv = map.view() as unknown as Record<string, unknown>;
    expect(map.locate('user:1', sv as never)).toBe(true);
    expect([sv.id, sv.name, sv.balance, sv.active]).toEqual([1, 'Ada Lovelace ✓', -(2n ** 63n), true]);
    // Back on the client: a view over the reply frame, same bytes, same fields.
    const u = await users.get('1');
    expect(u).toBeDefined();
    if (u === undefined) return;
    expect(Buffer.from(User.bytesOf(u)).equals(Buffer.from(stored))).toBe(true);
    expect(u.key).toBe('1');
    expect([u.id, u.name, u.friends.get(1), u.friends.get(2), u.balance, u.score, u.active]).toEqual([
      1,
      'Ada Lovelace ✓',
      3,
      0,
      -(2n ** 63n),
      0.1,
      true,
    ]);
    expect(await users.get('nobody')).toBeUndefined();
  });

  it('reads what the server wrote in place, and writes back a changed view without re-encoding', async () => {
    const users = collection(kv, 'user:', { struct: User });
    await users.set('2', { id: 2, name: 'bob', friends: [], balance: 0n, score: 1, active: false });
    const sv = map.view() as unknown as Record<string, unknown>;
    expect(map.locate('user:2', sv as never)).toBe(true);
    sv.name = 'Bob Ross 🎨'; // 13 bytes, server-side write in place
    sv.balance = 42n;
    const u = (await users.get('2'))!;
    expect([u.name, u.balance]).toEqual(['Bob Ross 🎨', 42n]);
    u.score = 2.5;
    u.friends.set(0, 1);
    await users.set('2', u);
    expect(map.get('user:2')).toEqual({
      id: 2,
      name: 'Bob Ross 🎨',
      friends: [1, 0, 0, 0, 0, 0, 0, 0],
      balance: 42n,
      score: 2.5,
      active: false,
    });
  });

  it('getMany answers a view per hit, over one reply frame', async () => {
    const users = collection(kv, 'm:', { struct: User });
    for (const i of [1, 2, 3]) {
      await users.set(`${i}`, { id: i, name: `m${i}`, friends: [i], balance: BigInt(i), score: i, active: i === 2 });
    }
    const got = await users.getMany(['3', 'none', '1', '2']);
    expect(got.map((u) => u && [u.key, u.id, u.name, u.active])).toEqual([
      ['3', 3, 'm3', false],
      undefined,
      ['1', 1, 'm1', false],
      ['2', 2, 'm2', true],
    ]);
    const [a, , b] = got;
    expect(User.bytesOf(a!).buffer).toBe(User.bytesOf(b!).buffer); // one frame
  });

  it('scans the collection in pages, resuming from the cursor', async () => {
    const users = collection(kv, 's:', { struct: User });
    for (let i = 0; i < 7; i++) {
      await users.set(`${i}`, { id: i, name: `s${i}`, friends: [], balance: 0n, score: 0, active: true });
    }
    const seen: [string, number, string][] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await users.scan({ limit: 3, cursor });
      for (const [id, v] of page.entries) seen.push([id, v.id, v.name]);
      cursor = page.cursor;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => [`${i}`, i, `s${i}`]));
    expect((await users.scan({ gte: '2', lt: '4' })).entries.map(([id]) => id)).toEqual(['2', '3']);
  });

  it('refuses what does not fit: on the client before sending, on the server by size', async () => {
    const users = collection(kv, 'user:', { struct: User });
    const long = { id: 1, name: 'x'.repeat(25), friends: [], balance: 0n, score: 0, active: true };
    expect((await rejection(users.set('9', long))).code).toBe('STRUCT_FIELD_OVERFLOW');
    expect(await users.has('9')).toBe(false);
    // Bytes of another size under the prefix: the struct map refuses them.
    expect((await rejection(kv.set('user:9', new Uint8Array(3)))).code).toBe('BAD_ARGUMENTS');
    expect(await users.delete('1')).toBe(true);
    expect(await users.has('1')).toBe(false);
  });
});

describe('struct collection over a KvActor storing plain bytes', () => {
  let server: Server;
  let kv: Awaited<ReturnType<typeof connect<typeof KvActor>>>;
  beforeAll(async () => {
    server = await serve(new offheap.OffHeapMap<string, unknown>({ threads: 1 }));
    kv = await connect<typeof KvActor>(server.published.url);
  });
  afterAll(async () => {
    await kv.close();
    await stop(server);
  });

  it('round-trips records, and refuses a stored value of another size with STRUCT_SIZE_MISMATCH', async () => {
    const users = collection(kv, 'user:', { struct: User });
    const v = User.view();
    v.id = 77;
    v.name = 'built in place';
    await users.set('77', v);
    const got = (await users.get('77'))!;
    expect(got.toObject()).toEqual({
      id: 77,
      name: 'built in place',
      friends: [0, 0, 0, 0, 0, 0, 0, 0],
      balance: 0n,
      score: 0,
      active: false,
    });
    await kv.set('user:bad', new Uint8Array(5));
    const e = await rejection(users.get('bad'));
    expect(e.code).toBe('STRUCT_SIZE_MISMATCH');
    expect(e.message).toContain('user:bad');
  });
});

describe('struct collections over the browser entry and over HTTP', () => {
  const g = globalThis as { WebSocket?: unknown };
  const saved = g.WebSocket;
  let server: Server;
  beforeAll(async () => {
    g.WebSocket = WebSocket; // what a browser has (Node 20 has none); the browser entry sets binaryType 'arraybuffer'
    server = await serve(new offheap.OffHeapMap<string, unknown>({ threads: 1 }));
  });
  afterAll(async () => {
    g.WebSocket = saved;
    await stop(server);
  });

  it('reads the same records as views of each reply, whatever carried it', async () => {
    const ws = await connectBrowser<typeof KvActor>(server.published.url);
    const http = httpClient<typeof KvActor>(server.published.httpUrl);
    try {
      const overWs = collection(ws, 'b:', { struct: User });
      const overHttp = collection(http, 'b:', { struct: User });
      await overWs.set('1', { id: 1, name: 'über', friends: [9], balance: -1n, score: -0.5, active: true });
      await overHttp.set('2', { id: 2, name: 'ﬁve', friends: [], balance: 1n, score: 0.5, active: false });
      for (const c of [overWs, overHttp]) {
        const [a, b] = await c.getMany(['1', '2']);
        expect([a?.name, a?.friends.get(0), a?.balance, b?.name, b?.score]).toEqual(['über', 9, -1n, 'ﬁve', 0.5]);
        // One buffer per reply (a WebSocket message or an HTTP body), both records inside it.
        expect(User.bytesOf(a!).buffer).toBe(User.bytesOf(b!).buffer);
        expect(User.bytesOf(a!).buffer.byteLength).toBeGreaterThan(2 * User.size);
      }
      expect((await overHttp.scan()).entries.map(([id, v]) => [id, v.id])).toEqual([
        ['1', 1],
        ['2', 2],
      ]);
    } finally {
      await ws.close();
      await http.close();
    }
  });
});
