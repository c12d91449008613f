import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KvActor, kvRoutes, type Published, publish, spawn } from '@heapless/actor';
import { connect, HeaplessError } from '@heapless/client';
import { OffHeapMap } from '@heapless/offheap';
import { afterAll, describe, expect, it } from 'vitest';

const root = mkdtempSync(join(tmpdir(), 'heapless-storage-errors-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;

/** A KV server over `map`, a WebSocket client, and how to end both. */
async function serveMap(map: OffHeapMap<string, unknown>) {
  const ref = spawn(new KvActor(map));
  const server: Published = await publish(ref, { routes: kvRoutes });
  const kv = await connect<typeof KvActor>(server.url, { reconnect: false });
  return {
    kv,
    url: (path: string) => `${server.httpUrl}${path}`,
    async close() {
      await kv.close();
      await server.close();
      await ref.stop().catch(() => {}); // closing a map whose engine failed reports that failure again
    },
  };
}

const value = (i: number) => new Uint8Array(200).fill(i & 0xff);

async function rejection(p: Promise<unknown>): Promise<HeaplessError> {
  const e = await p.then(
    () => expect.unreachable('should have failed'),
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(HeaplessError);
  return e as HeaplessError;
}

describe('storage failures reach clients with their own codes', () => {
  it('a damaged table: STORAGE_CORRUPTION over the WebSocket, 500 over HTTP, and the server stays up', async () => {
    const dir = join(root, `d${dirs++}`);
    const writer = await OffHeapMap.open<string, unknown>({ dir, threads: 1 });
    for (let i = 0; i < 4000; i++) writer.setBytes(`k:${String(i).padStart(5, '0')}`, value(i));
    await writer.close(); // flushes into a table and writes the map image
    const table = readdirSync(dir)
      .filter((f) => f.endsWith('.sst'))
      .map((f) => join(dir, f))
      .sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
    const bytes = readFileSync(table);
    bytes[Math.floor(bytes.length / 3)]! ^= 0x40; // inside the data blocks
    writeFileSync(table, bytes);

    const map = await OffHeapMap.open<string, unknown>({ dir, threads: 1 });
    expect(map.stats().loadedFrom).toBe('image'); // the open read no table: the damage is found by a scan
    const s = await serveMap(map);
    try {
      let failure: HeaplessError | undefined;
      let cursor: string | undefined;
      do {
        const page = await s.kv.scan({ limit: 500, cursor }).catch((e: HeaplessError) => {
          failure = e;
          return { cursor: undefined };
        });
        cursor = page.cursor;
      } while (cursor !== undefined);
      expect(failure).toBeInstanceOf(HeaplessError);
      expect(failure).toMatchObject({ code: 'STORAGE_CORRUPTION', wire: 403 });
      expect(failure!.message).toContain('.sst');
      const http = await fetch(s.url('/v1/kv?limit=10000'));
      expect(http.status).toBe(500);
      expect(await http.json()).toMatchObject({ code: 'STORAGE_CORRUPTION', wire: 403 });
      // Point reads come from the map's memory, and the server still answers.
      expect(Array.from((await s.kv.get('k:01000'))!)).toEqual(Array.from(value(1000)));
    } finally {
      await s.close();
    }
  });

  it('an engine that cannot write (its directory removed): STORAGE_PERSIST_FAILED, 503, for writes and scans', async () => {
    const dir = join(root, `d${dirs++}`);
    // A small memtable: the writes below soon need a new WAL and a table, in a directory that is gone.
    const map = await OffHeapMap.open<string, unknown>({ dir, threads: 1, engine: { writeBufferSize: 8192 } });
    const s = await serveMap(map);
    try {
      await s.kv.set('before', value(1));
      rmSync(dir, { recursive: true, force: true });
      let failure: HeaplessError | undefined;
      for (let i = 0; i < 500 && failure === undefined; i++) {
        await s.kv.set(`k:${i}`, value(i)).catch((e: HeaplessError) => {
          failure = e;
        });
      }
      expect(failure).toMatchObject({ code: 'STORAGE_PERSIST_FAILED', wire: 407 });
      expect((await rejection(s.kv.set('after', value(2)))).code).toBe('STORAGE_PERSIST_FAILED');
      expect((await rejection(s.kv.scan({}))).code).toBe('STORAGE_PERSIST_FAILED');
      const put = await fetch(s.url('/v1/kv/after'), {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: '1',
      });
      expect(put.status).toBe(503);
      expect(await put.json()).toMatchObject({ code: 'STORAGE_PERSIST_FAILED', wire: 407 });
      expect(Array.from((await s.kv.get('before'))!)).toEqual(Array.from(value(1))); // reads still served
    } finally {
      await s.close();
    }
  });

  it('a closed store: STORAGE_CLOSED, 503', async () => {
    const dir = join(root, `d${dirs++}`);
    const map = await OffHeapMap.open<string, unknown>({ dir, threads: 1 });
    const s = await serveMap(map);
    try {
      await s.kv.set('k', value(1));
      await map.close(); // under the actor, as a shutdown racing a call would
      // (Reads of the last state stay possible on the owner thread; writes and ordered reads are refused.)
      expect((await rejection(s.kv.set('k', value(2)))).code).toBe('STORAGE_CLOSED');
      expect((await rejection(s.kv.delete('k'))).code).toBe('STORAGE_CLOSED');
      expect((await rejection(s.kv.scan({}))).code).toBe('STORAGE_CLOSED');
      const http = await fetch(s.url('/v1/kv/k'), {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: '2',
      });
      expect(http.status).toBe(503);
      expect(await http.json()).toMatchObject({ code: 'STORAGE_CLOSED', wire: 405 });
    } finally {
      await s.close();
    }
  });
});
