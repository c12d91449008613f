import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KvActor, kvRoutes, type Published, publish, spawn } from '@heapless/actor';
import { collection, connect, httpClient } from '@heapless/client';
import { OffHeapMap } from '@heapless/offheap';
import { pack, unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = mkdtempSync(join(tmpdir(), 'e2e-kv-batch-'));
const MAX_OPS = 50;
let server: Published;
let ref: ReturnType<typeof spawn<KvActor>>;
let kv: Awaited<ReturnType<typeof connect<typeof KvActor>>>;

beforeAll(async () => {
  const map = await OffHeapMap.open<string, unknown>({ dir: root, threads: 1 });
  ref = spawn(new KvActor(map, { maxBatchOps: MAX_OPS, maxKeyBytes: 64, maxValueBytes: 256 }));
  server = await publish(ref, { routes: kvRoutes, maxBodyBytes: 16 * 1024 });
  kv = await connect<typeof KvActor>(server.url);
});
afterAll(async () => {
  await kv.close();
  await server.close();
  await ref.stop();
  rmSync(root, { recursive: true, force: true });
});

const url = (path: string) => `${server.httpUrl}${path}`;
const b = (s: string) => Buffer.from(s);

/** POSTs `body` (JSON unless bytes, then msgpack) to the batch route; the status and the decoded JSON answer. */
async function postBatch(body: unknown, query = ''): Promise<{ status: number; json: Record<string, unknown> }> {
  const bytes = body instanceof Uint8Array;
  const res = await fetch(url(`/v1/kv/_batch${query}`), {
    method: 'POST',
    headers: { 'content-type': bytes ? 'application/msgpack' : 'application/json' },
    body: bytes ? body : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('KV batch over the WebSocket', () => {
  it('applies sets, deletes and metadata at once, answering the engine sequence, in order across batches', async () => {
    await kv.set('w:gone', b('x'));
    const first = await kv.batch(
      [
        { type: 'set', key: 'w:1', value: b('one') },
        { type: 'delete', key: 'w:gone' },
        { type: 'set', key: 'w:1', value: b('uno') },
      ],
      { meta: { offset: b('1'), schema: b('v1') }, sync: true },
    );
    const second = await kv.setMany([['w:2', b('two')]]);
    expect(second.sequence).toBeGreaterThan(first.sequence!);
    expect(Buffer.from((await kv.get('w:1'))!).toString()).toBe('uno');
    expect(await kv.has('w:gone')).toBe(false);
    expect(Buffer.from((await kv.getMeta('offset'))!).toString()).toBe('1');
    await kv.batch([], { meta: { schema: null } });
    expect(await kv.getMeta('schema')).toBeUndefined();
    await kv.setMeta('cursor', b('c'));
    expect(Buffer.from((await kv.getMeta('cursor'))!).toString()).toBe('c');
    await kv.deleteMeta('cursor');
    expect(await kv.getMeta('cursor')).toBeUndefined();
    // Metadata is no key: neither scan nor get sees it.
    expect(await kv.get('offset')).toBeUndefined();
    const page = await kv.scan({ prefix: '' });
    expect(page.entries.map(([k]) => k)).not.toContain('offset');
  });

  it('refuses a bad batch with a typed error and writes none of it', async () => {
    const size = await kv.size();
    const good = { type: 'set' as const, key: 'bad:ok', value: b('v') };
    const cases: [unknown[], unknown, string][] = [
      [[good, { type: 'put', key: 'k', value: b('v') }], undefined, 'BAD_ARGUMENTS'],
      [[good, { type: 'set', key: 5, value: b('v') }], undefined, 'BAD_ARGUMENTS'],
      [[good, { type: 'set', key: 'k', value: 'not bytes' }], undefined, 'BAD_ARGUMENTS'],
      [[good, { type: 'delete', key: '\ud800' }], undefined, 'BAD_ARGUMENTS'],
      [[good, null], undefined, 'BAD_ARGUMENTS'],
      [[good, { type: 'set', key: 'k'.repeat(65), value: b('v') }], undefined, 'KEY_TOO_LARGE'],
      [[good, { type: 'set', key: 'k', value: new Uint8Array(257) }], undefined, 'VALUE_TOO_LARGE'],
      [Array.from({ length: MAX_OPS + 1 }, () => good), undefined, 'BATCH_TOO_LARGE'],
      [
        [good],
        { meta: Object.fromEntries(Array.from({ length: MAX_OPS }, (_, i) => [`m${i}`, b('x')])) },
        'BATCH_TOO_LARGE',
      ],
      [[good], { meta: { '': b('x') } }, 'BAD_ARGUMENTS'],
      [[good], { meta: { n: 'text' } }, 'BAD_ARGUMENTS'],
      [[good], { meta: { n: new Uint8Array(64 * 1024 + 1) } }, 'VALUE_TOO_LARGE'],
      [[good], { meta: { ['n'.repeat(256)]: b('x') } }, 'KEY_TOO_LARGE'],
      [[good], { meta: [b('x')] }, 'BAD_ARGUMENTS'],
      [[good], 'options', 'BAD_ARGUMENTS'],
    ];
    for (const [ops, opts, code] of cases) {
      // biome-ignore lint/suspicious/noExplicitAny: hostile input on purpose
      await expect(kv.batch(ops as any, opts as any)).rejects.toMatchObject({ code });
    }
    // biome-ignore lint/suspicious/noExplicitAny: hostile input on purpose
    await expect(kv.batch('ops' as any)).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
    // biome-ignore lint/suspicious/noExplicitAny: hostile input on purpose
    await expect(kv.setMany([['a', b('1')], ['b']] as any)).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
    // biome-ignore lint/suspicious/noExplicitAny: hostile input on purpose
    await expect(kv.getMeta(null as any)).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
    expect(await kv.size()).toBe(size);
    expect(await kv.has('bad:ok')).toBe(false);
  });
});

describe('KV batch and metadata over HTTP', () => {
  it('POST /v1/kv/_batch with JSON encodes each value once; msgpack values are stored as they are', async () => {
    const json = await postBatch(
      {
        ops: [
          { type: 'set', key: 'h:1', value: { n: 1 } },
          { type: 'delete', key: 'h:none' },
        ],
        meta: { at: 7 },
      },
      '?sync=1',
    );
    expect(json.status).toBe(200);
    expect(typeof json.json.sequence).toBe('number');
    expect(unpack((await kv.get('h:1'))!)).toEqual({ n: 1 });
    expect(unpack((await kv.getMeta('at'))!)).toBe(7);
    const raw = Uint8Array.of(0xc1, 2, 3); // not msgpack: stored as given
    const mp = await postBatch(pack({ ops: [{ type: 'set', key: 'h:2', value: raw }], meta: { at: null } }));
    expect(mp.status).toBe(200);
    expect(Buffer.from((await kv.get('h:2'))!).equals(Buffer.from(raw))).toBe(true);
    expect(await kv.getMeta('at')).toBeUndefined();
    // The call route and the typed HTTP client reach the same method.
    const http = httpClient<typeof KvActor>(server.httpUrl);
    await http.batch([{ type: 'set', key: 'h:3', value: b('3') }], { meta: { at: b('3') } });
    expect(Buffer.from((await kv.getMeta('at'))!).toString()).toBe('3');
  });

  it('takes a metadata name __proto__ as sent over the WebSocket and in msgpack bodies, overwriting no other', async () => {
    // Object.fromEntries makes `__proto__` an own property, as a decoded map must.
    const names = (tag: string) =>
      Object.fromEntries([
        ['__proto__', b(`${tag}1`)],
        ['__proto_', b(`${tag}2`)],
      ]);
    const stored = async () =>
      (await Promise.all([kv.getMeta('__proto__'), kv.getMeta('__proto_')])).map((v) => v && Buffer.from(v).toString());
    await kv.batch([], { meta: names('ws') });
    expect(await stored()).toEqual(['ws1', 'ws2']);
    expect((await postBatch(pack({ ops: [], meta: names('mp') }))).status).toBe(200);
    expect(await stored()).toEqual(['mp1', 'mp2']);
    const http = httpClient<typeof KvActor>(server.httpUrl);
    await http.batch([], { meta: names('call') });
    expect(await stored()).toEqual(['call1', 'call2']);
    // JSON cannot carry bytes, but it can remove a name: the call route's JSON body keeps __proto__ as sent too.
    const removed = await fetch(url('/v1/call/batch'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '[[], {"meta": {"__proto__": null}}]',
    });
    expect(removed.status).toBe(200);
    expect(await stored()).toEqual([undefined, 'call2']);
    // A value holding such a map comes back to the typed client as it went.
    const users = collection<Record<string, number>>(kv, 'proto:');
    await users.set('1', JSON.parse('{"__proto__":1,"__proto_":2}'));
    const got = (await users.get('1'))!;
    expect(JSON.stringify(got)).toBe('{"__proto__":1,"__proto_":2}');
    expect(Object.getPrototypeOf(got)).toBe(Object.prototype);
    await kv.batch([{ type: 'delete', key: 'proto:1' }], {
      meta: { ...Object.fromEntries([['__proto__', null]]), __proto_: null },
    });
  });

  it('GET, PUT and DELETE /v1/kv/_meta/:name', async () => {
    expect((await fetch(url('/v1/kv/_meta/stream'))).status).toBe(404);
    const put = await fetch(url('/v1/kv/_meta/stream'), {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ seq: 42 }),
    });
    expect(put.status).toBe(200);
    expect(await (await fetch(url('/v1/kv/_meta/stream'))).json()).toEqual({ seq: 42 });
    const octets = await fetch(url('/v1/kv/_meta/stream'), { headers: { accept: 'application/octet-stream' } });
    expect(unpack(new Uint8Array(await octets.arrayBuffer()))).toEqual({ seq: 42 });
    expect((await fetch(url('/v1/kv/_meta/stream'), { method: 'DELETE' })).status).toBe(200);
    expect((await fetch(url('/v1/kv/_meta/stream'))).status).toBe(404);
    expect((await fetch(url(`/v1/kv/_meta/${'n'.repeat(256)}`))).status).toBe(413);
    expect((await fetch(url('/v1/kv/_meta/%ED%A0%80'))).status).toBe(400);
  });

  it('answers hostile batch bodies with typed errors, writing nothing', async () => {
    const size = await kv.size();
    const cases: [unknown, number, string][] = [
      ['{"ops": [', 400, 'BAD_FRAME'],
      [Uint8Array.of(0x92, 0x01), 400, 'BAD_FRAME'], // truncated msgpack
      [[1, 2], 400, 'BAD_ARGUMENTS'],
      [null, 400, 'BAD_ARGUMENTS'],
      [{ ops: 'no' }, 400, 'BAD_ARGUMENTS'],
      [
        {
          ops: [
            { type: 'set', key: 'h:x', value: 1 },
            { type: 'drop', key: 'h:y' },
          ],
        },
        400,
        'BAD_ARGUMENTS',
      ],
      [{ ops: [{ type: 'set', key: ['k'], value: 1 }] }, 400, 'BAD_ARGUMENTS'],
      ['{"ops": [{"type": "set", "key": "\\ud800", "value": 1}]}', 400, 'BAD_ARGUMENTS'],
      [{ ops: [{ type: 'set', key: 'k'.repeat(65), value: 1 }] }, 413, 'KEY_TOO_LARGE'],
      [{ ops: [{ type: 'set', key: 'h:big', value: 'v'.repeat(300) }] }, 413, 'VALUE_TOO_LARGE'],
      [pack({ ops: [{ type: 'set', key: 'h:str', value: 'a string, not bin' }] }), 400, 'BAD_ARGUMENTS'],
      [
        { ops: Array.from({ length: MAX_OPS + 1 }, (_, i) => ({ type: 'delete', key: `d${i}` })) },
        413,
        'BATCH_TOO_LARGE',
      ],
      [{ ops: [], meta: 'offset' }, 400, 'BAD_ARGUMENTS'],
      [{ ops: [{ type: 'set', key: 'h:z', value: 'x'.repeat(17 * 1024) }] }, 413, 'BODY_TOO_LARGE'],
    ];
    for (const [body, status, code] of cases) {
      const res = await postBatch(body);
      expect({ body, status: res.status, code: res.json.code }).toEqual({ body, status, code });
    }
    const wrongType = await fetch(url('/v1/kv/_batch'), {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'ops',
    });
    expect(wrongType.status).toBe(415);
    expect(await kv.size()).toBe(size);
    expect(await kv.has('h:x')).toBe(false);
  });
});
