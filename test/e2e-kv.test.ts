import { inspect } from 'node:util';
import { KvActor, kvRoutes, publish, spawn } from '@heapless/actor';
import { pack as clientPack, unpack as clientUnpack, collection, connect, httpClient } from '@heapless/client';
import { OffHeapMap } from '@heapless/offheap';
import { pack, unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

interface User {
  name: string;
  age: number;
}

let server: Awaited<ReturnType<typeof publish>>;
let ref: ReturnType<typeof spawn<KvActor>>;
let kv: Awaited<ReturnType<typeof connect<typeof KvActor>>>;

beforeAll(async () => {
  ref = spawn(new KvActor(new OffHeapMap<string, unknown>({ threads: 1 }), { persistent: false }));
  server = await publish(ref, { routes: kvRoutes });
  kv = await connect<typeof KvActor>(server.url);
});
afterAll(async () => {
  await kv.close();
  await server.close();
  await ref.stop();
});

const url = (path: string) => `${server.httpUrl}${path}`;

describe('typed collections over the KV actor', () => {
  it('encodes each value once on the client; the server hands the same bytes back', async () => {
    const users = collection<User>(kv, 'user:');
    await users.set('1', { name: 'ada', age: 36 });
    await users.set('2', { name: 'bob', age: 41 });
    expect(await users.get('1')).toEqual({ name: 'ada', age: 36 });
    expect(await users.getMany(['2', 'nope', '1'])).toEqual([
      { name: 'bob', age: 41 },
      undefined,
      { name: 'ada', age: 36 },
    ]);
    expect(await users.has('2')).toBe(true);
    expect(await users.delete('2')).toBe(true);
    // Under the prefix, as plain msgpack any client can read.
    expect(unpack((await kv.get('user:1'))!)).toEqual({ name: 'ada', age: 36 });
  });
});

describe('HTTP routes of the KV actor', () => {
  it('PUT JSON, GET it as JSON, as msgpack and as raw bytes; the WebSocket sees the same', async () => {
    const put = await fetch(url('/v1/kv/p:1'), {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'cy', tags: ['a'] }),
    });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({}); // a memory-only store has no sequence to give
    expect(await (await fetch(url('/v1/kv/p:1'))).json()).toEqual({ name: 'cy', tags: ['a'] });
    const asMsgpack = await fetch(url('/v1/kv/p:1'), { headers: { accept: 'application/msgpack' } });
    expect(unpack(new Uint8Array(await asMsgpack.arrayBuffer()))).toEqual({ name: 'cy', tags: ['a'] });
    expect(unpack((await kv.get('p:1'))!)).toEqual({ name: 'cy', tags: ['a'] });
  });

  it('answers a get with the value it read, not one a later call of the same frame wrote over it', async () => {
    await kv.set('f:1', pack('before'));
    // One frame: the get is answered from the arena, then the set overwrites the record in place (same size).
    const [got] = await Promise.all([kv.get('f:1'), kv.set('f:1', pack('after!'))]);
    expect(unpack(got!)).toBe('before');
    expect(unpack((await kv.get('f:1'))!)).toBe('after!');
  });

  it('stores a msgpack or octet-stream body as it is', async () => {
    const bytes = pack({ raw: true });
    await fetch(url('/v1/kv/p:2'), { method: 'PUT', headers: { 'content-type': 'application/msgpack' }, body: bytes });
    expect(Buffer.from((await kv.get('p:2'))!).equals(Buffer.from(bytes))).toBe(true);
    const blob = new Uint8Array([0xc1, 0, 1, 2]); // not msgpack
    await fetch(url('/v1/kv/p:3'), {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body: blob,
    });
    const raw = await fetch(url('/v1/kv/p:3'), { headers: { accept: 'application/octet-stream' } });
    expect([...new Uint8Array(await raw.arrayBuffer())]).toEqual([0xc1, 0, 1, 2]);
    const asJson = await fetch(url('/v1/kv/p:3'));
    expect(asJson.status).toBe(406);
    const refusal = (await asJson.json()) as { code: string; message: string };
    expect(refusal).toMatchObject({ code: 'NOT_ACCEPTABLE', wire: 112 });
    expect(refusal.message).toContain('ask for application/octet-stream or application/msgpack');
  });

  it('refuses a getMany of more than 1 MiB of values with RESULT_TOO_LARGE, over WebSocket and HTTP (400)', async () => {
    const big = new Uint8Array(300 * 1024).fill(7);
    for (const i of [1, 2, 3, 4]) await kv.set(`big:${i}`, big);
    const keys = ['big:1', 'big:2', 'big:3', 'big:4'];
    expect((await kv.getMany(keys.slice(0, 3))).map((v) => v?.length)).toEqual([big.length, big.length, big.length]);
    await expect(kv.getMany(keys)).rejects.toMatchObject({ code: 'RESULT_TOO_LARGE', wire: 408 });
    const res = await fetch(url('/v1/kv/_getMany'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(keys),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'RESULT_TOO_LARGE', wire: 408 });
    expect(await kv.get('big:1')).toHaveLength(big.length); // the connection goes on
  });

  it('answers a missing key with 404 NOT_FOUND, deletes, gets many, and lists by prefix', async () => {
    const missing = await fetch(url('/v1/kv/none'));
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 'NOT_FOUND', wire: 402 });
    for (const i of [1, 2, 3]) await kv.set(`l:${i}`, pack(i));
    const many = await fetch(url('/v1/kv/_getMany'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(['l:3', 'l:9', 'l:1']),
    });
    expect(await many.json()).toEqual([{ key: 'l:3', value: 3 }, null, { key: 'l:1', value: 1 }]);
    const page1 = (await (await fetch(url('/v1/kv?prefix=l:&limit=2'))).json()) as { cursor: string };
    expect(page1).toEqual({
      entries: [
        { key: 'l:1', value: 1 },
        { key: 'l:2', value: 2 },
      ],
      cursor: 'l:2',
    });
    const page2 = await (await fetch(url(`/v1/kv?prefix=l:&limit=2&cursor=${page1.cursor}`))).json();
    expect(page2).toEqual({ entries: [{ key: 'l:3', value: 3 }], cursor: null });
    const del = await fetch(url('/v1/kv/l:1'), { method: 'DELETE' });
    expect(await del.json()).toEqual({ deleted: true });
    expect(await kv.has('l:1')).toBe(false);
  });

  it('answers bad bodies and limits with typed errors', async () => {
    const badJson = await fetch(url('/v1/kv/x'), {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{',
    });
    expect(await badJson.json()).toMatchObject({ code: 'BAD_FRAME' });
    const longKey = await fetch(url(`/v1/kv/${'k'.repeat(2000)}`), {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '1',
    });
    expect(longKey.status).toBe(413);
    expect(await longKey.json()).toMatchObject({ code: 'KEY_TOO_LARGE' });
    const badLimit = await fetch(url('/v1/kv?limit=0'));
    expect(await badLimit.json()).toMatchObject({ code: 'BAD_ARGUMENTS' });
  });
});

describe('values without a JSON form, over HTTP', () => {
  // Each a value JSON cannot give exactly: not msgpack, a struct record (msgpack's first value and trailing bytes),
  // msgpack holding bytes, a bigint, undefined.
  const odd: [string, Uint8Array][] = [
    ['v:b', Uint8Array.of(0xc1, 0, 1, 2)],
    ['v:c', Uint8Array.of(1, 0, 0, 0, 2, 0, 0, 0)],
    ['v:d', pack({ img: Uint8Array.of(1, 2) })],
    ['v:e', pack(2n ** 62n)],
    ['v:f', pack(undefined)],
  ];
  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

  it('list and getMany every value: JSON where it has an exact form, base64 bytes otherwise', async () => {
    await kv.set('v:a', pack({ n: 1 }));
    for (const [key, bytes] of odd) await kv.set(key, bytes);
    const expected = [{ key: 'v:a', value: { n: 1 } }, ...odd.map(([key, bytes]) => ({ key, bytes: b64(bytes) }))];
    for (const accept of [undefined, 'application/json', 'application/octet-stream', '*/*']) {
      const res = await fetch(url('/v1/kv?prefix=v:'), { headers: accept === undefined ? {} : { accept } });
      expect(res.status, accept).toBe(200);
      expect(res.headers.get('content-type'), accept).toContain('application/json');
      expect(await res.json(), accept).toEqual({ entries: expected, cursor: null });
    }
    const many = await fetch(url('/v1/kv/_getMany'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(['v:e', 'v:none', 'v:a']),
    });
    expect(await many.json()).toEqual([{ key: 'v:e', bytes: b64(odd[3][1]) }, null, { key: 'v:a', value: { n: 1 } }]);
    // In msgpack, the page holds the stored bytes as they are.
    const asMsgpack = await fetch(url('/v1/kv?prefix=v:'), { headers: { accept: 'application/msgpack' } });
    const page = unpack(new Uint8Array(await asMsgpack.arrayBuffer())) as { entries: [string, Uint8Array][] };
    expect(page.entries.slice(1).map(([k, v]) => [k, b64(v)])).toEqual(odd.map(([k, v]) => [k, b64(v)]));
    // A single value as JSON: 406 naming what to ask for; as bytes, as stored.
    for (const [key, bytes] of odd) {
      const res = await fetch(url(`/v1/kv/${key}`));
      expect(res.status, key).toBe(406);
      expect(await res.json()).toMatchObject({ code: 'NOT_ACCEPTABLE', message: expect.stringContaining(key) });
      const raw = await fetch(url(`/v1/kv/${key}`), { headers: { accept: 'application/octet-stream' } });
      expect(b64(new Uint8Array(await raw.arrayBuffer()))).toBe(b64(bytes));
    }
  });

  it('POST /v1/call answers bytes in JSON as { bytes: base64 }, never as a Node Buffer', async () => {
    await kv.set('v:g', Uint8Array.of(1, 2, 3));
    const call = (method: string, args: unknown[]) =>
      fetch(url(`/v1/call/${method}`), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(args),
      }).then((r) => r.json());
    expect(await call('get', ['v:g'])).toEqual({ bytes: 'AQID' });
    expect(await call('getMany', [['v:g', 'v:none']])).toEqual([{ bytes: 'AQID' }, null]);
    expect(await call('scan', [{ prefix: 'v:g' }])).toEqual({ entries: [['v:g', { bytes: 'AQID' }]] });
  });

  it('POST /v1/call in JSON takes bytes as answers give them, { bytes: base64 }, at any depth', async () => {
    const call = (method: string, args: unknown[]) =>
      fetch(url(`/v1/call/${method}`), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(args),
      });
    expect((await call('set', ['v:j', { bytes: 'AQID' }])).status).toBe(200);
    expect([...(await kv.get('v:j'))!]).toEqual([1, 2, 3]);
    // What a JSON answer gave goes back as it came.
    const read = await (await call('get', ['v:j'])).json();
    await call('set', ['v:k', read]);
    expect([...(await kv.get('v:k'))!]).toEqual([1, 2, 3]);
    const ops = [{ type: 'set', key: 'v:l', value: { bytes: 'BAU=' } }];
    expect((await call('batch', [ops])).status).toBe(200);
    expect([...(await kv.get('v:l'))!]).toEqual([4, 5]);
    // Not bytes: base64 that is not canonical, or an object with more keys, stays an object and is refused.
    for (const value of [{ bytes: 'AQI' }, { bytes: 'AQID', more: 1 }, { bytes: 1 }]) {
      const res = await call('set', ['v:m', value]);
      expect(res.status).toBe(400);
    }
    expect(await kv.get('v:m')).toBeUndefined();
    // A body nested as deep as the size limit lets through is an answer, not a stack overflow.
    const deep = `["v:n", ${'['.repeat(200_000)}${']'.repeat(200_000)}]`;
    const res = await fetch(url('/v1/call/set'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: deep,
    });
    expect(res.status).toBeLessThan(500);
  });
});

describe('one rule for every HTTP answer', () => {
  it('PUT and DELETE of a key answer 200 with a JSON object, as every write does', async () => {
    const put = await fetch(url('/v1/kv/w:1'), {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '1',
    });
    expect([put.status, put.headers.get('content-type'), await put.json()]).toEqual([
      200,
      'application/json; charset=utf-8',
      {},
    ]);
    const del = await fetch(url('/v1/kv/w:1'), { method: 'DELETE' });
    expect([del.status, await del.json()]).toEqual([200, { deleted: true }]);
    const again = await fetch(url('/v1/kv/w:1'), { method: 'DELETE' });
    expect([again.status, await again.json()]).toEqual([200, { deleted: false }]);
  });

  it('415 names the media types the route takes, in the message and the Accept header', async () => {
    const requests = 'application/json, application/msgpack';
    const cases: [string, string, string | undefined, string][] = [
      ['POST', '/v1/call/get', 'text/plain', requests],
      ['POST', '/v1/call/get', undefined, requests],
      ['POST', '/v1/kv/_batch', 'application/octet-stream', requests],
      ['POST', '/v1/kv/_getMany', 'text/plain; charset=utf-8', requests],
      ['PUT', '/v1/kv/t:1', 'text/plain', 'application/json, application/msgpack, application/octet-stream'],
      [
        'PUT',
        '/v1/kv/_meta/t',
        'application/x-www-form-urlencoded',
        'application/json, application/msgpack, application/octet-stream',
      ],
    ];
    for (const [method, path, type, accepted] of cases) {
      const res = await fetch(url(path), {
        method,
        headers: type === undefined ? {} : { 'content-type': type },
        body: type === undefined ? new Uint8Array([1]) : 'x',
      });
      const what = `${method} ${path} ${type}`;
      expect(res.status, what).toBe(415);
      expect(res.headers.get('accept'), what).toBe(accepted);
      const body = (await res.json()) as { code: string; message: string };
      expect(body.code, what).toBe('UNSUPPORTED_MEDIA_TYPE');
      expect(body.message, what).toContain(`send ${accepted}`);
    }
    expect(await kv.has('t:1')).toBe(false);
    // fastify parses even an empty body by its content-type: that one is refused the same way.
    const empty = await fetch(url('/v1/call/get'), { method: 'POST', headers: { 'content-type': 'text/plain' } });
    expect([empty.status, empty.headers.get('accept')]).toEqual([415, requests]);
    const withBody = await fetch(url('/v1/kv/t:1'), {
      method: 'DELETE',
      headers: { 'content-type': 'text/plain' },
      body: 'x',
    });
    expect([withBody.status, await withBody.json()]).toEqual([
      415,
      { code: 'UNSUPPORTED_MEDIA_TYPE', wire: 106, message: 'DELETE /v1/kv/:key takes no body (and no content-type)' },
    ]);
  });
});

describe('the client ref of a KV server', () => {
  it('offers exactly the methods of the server’s hello, and describes itself without a call', async () => {
    const seen: unknown[] = [];
    const onUnhandled = (e: unknown) => seen.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const k = kv as unknown as Record<string, unknown>;
      for (const m of KvActor.exposed) expect(typeof k[m], m).toBe('function');
      for (const probe of ['onStop', 'stop', 'nope', 'then', '$$typeof', 'nodeType', 'asymmetricMatch']) {
        expect(k[probe], probe).toBeUndefined();
      }
      const json = JSON.parse(JSON.stringify({ kv }));
      expect(json).toEqual({ kv: { heaplessRef: server.url, methods: [...KvActor.exposed] } });
      expect(inspect(kv)).toContain(`HeaplessRef <${server.url}>`);
      expect(`${kv}`).toBe(`[HeaplessRef ${server.url}]`);
      expect(await Promise.resolve(kv)).toBe(kv);
      // One actor answers in arrival order: a stray call made above would be answered before this one.
      await kv.size();
      await new Promise((r) => setImmediate(r));
      expect(seen).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('exports pack and unpack: values encoded once on the client, read back as JSON by the server', async () => {
    await kv.set('p:1', clientPack({ name: 'ada', tags: ['x'] }));
    expect(await (await fetch(url('/v1/kv/p:1'))).json()).toEqual({ name: 'ada', tags: ['x'] });
    expect(clientUnpack((await kv.get('p:1'))!)).toEqual({ name: 'ada', tags: ['x'] });
    expect(() => clientPack({ bad: '\ud800' })).toThrow(expect.objectContaining({ code: 'BAD_ARGUMENTS' }));
  });
});

describe('router and body errors', () => {
  it('answer with the documented { code, wire, message } body and status', async () => {
    const cases: [string, RequestInit, number, string][] = [
      ['/nope', {}, 404, 'UNKNOWN_ROUTE'],
      ['/v1/call/get', { method: 'DELETE' }, 404, 'UNKNOWN_ROUTE'],
      ['/v1/kv/%FF', {}, 400, 'BAD_URL'],
      [
        '/v1/kv/%ED%A0%80',
        { method: 'PUT', body: '1', headers: { 'content-type': 'application/json' } },
        400,
        'BAD_URL',
      ],
      [`/v1/kv/${'k'.repeat(9000)}`, {}, 414, 'URL_TOO_LONG'],
    ];
    const msgpackBody = (bytes: number[]): RequestInit => ({
      method: 'POST',
      headers: { 'content-type': 'application/msgpack' },
      body: Uint8Array.from(bytes),
    });
    // 0xc1 is the one byte msgpack never uses; msgpackr decodes it to a marker object rather than failing.
    for (const body of [[0xc1], [0x91, 0xc1], [0x92, 0xa1, 0x61, 0x81, 0xa1, 0x62, 0xc1], [0x92, 0x01], [0x90, 0x01]]) {
      cases.push(['/v1/call/get', msgpackBody(body), 400, 'BAD_FRAME']);
      cases.push(['/v1/kv/_getMany', msgpackBody(body), 400, 'BAD_FRAME']);
    }
    for (const [path, init, status, code] of cases) {
      const r = await fetch(url(path), init);
      expect(r.status, `${init.method ?? 'GET'} ${path.slice(0, 40)}`).toBe(status);
      const body = await r.json();
      expect(body, path.slice(0, 40)).toEqual({ code, wire: expect.any(Number), message: expect.any(String) });
    }
    expect(await kv.get('a')).toBeUndefined(); // the server is still serving
  });
});

describe('keys with a lone surrogate, on every path', () => {
  const json = (body: unknown) => ({
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body), // JSON escapes a lone surrogate (\ud800), and JSON.parse gives it back
  });

  it('never reach the map: no two keys name one record, over WebSocket, HTTP and collections', async () => {
    await kv.set('s:\ufffd', pack('replacement'));
    const http = httpClient<typeof KvActor>(server.httpUrl);
    for (const bad of ['s:\ud800', 's:\udfff', 's:\ud83d']) {
      // The client refuses what msgpack would have turned into U+FFFD; calls beside it in the same frame still go.
      const [refused, other] = await Promise.allSettled([kv.set(bad, pack('alias')), kv.get('s:\ufffd')]);
      expect(refused).toMatchObject({ status: 'rejected', reason: { code: 'BAD_ARGUMENTS' } });
      expect(other.status).toBe('fulfilled');
      await expect(kv.get(bad)).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
      await expect(http.set(bad, pack('alias'))).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
      await expect(collection(kv, 's:').set(bad.slice(2), 'alias')).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
      // JSON carries the lone surrogate to the server, which refuses it.
      for (const [path, body] of [
        ['/v1/call/get', [bad]],
        ['/v1/kv/_getMany', [bad]],
      ] as const) {
        const r = await fetch(url(path), json(body));
        expect(r.status).toBe(400);
        expect(await r.json()).toMatchObject({ code: 'BAD_ARGUMENTS', wire: 301 });
      }
    }
    await http.close();
    expect(unpack((await kv.get('s:\ufffd'))!)).toBe('replacement');
    expect((await kv.scan({ prefix: 's:' })).entries.map(([k]) => k)).toEqual(['s:\ufffd']);
  });

  it('HTTP: a query escape that is not UTF-8 is BAD_URL, never read as text or as U+FFFD', async () => {
    await kv.set('q:%FF', pack('percent'));
    await kv.set('q:\ufffd', pack('replacement'));
    for (const q of ['%FF', '%ED%A0%80', '%E2%82', '%', '%zz']) {
      const r = await fetch(url(`/v1/kv?prefix=q:${q}`));
      expect(r.status).toBe(400);
      expect(await r.json()).toMatchObject({ code: 'BAD_URL', wire: 108 });
    }
    const literal = await (await fetch(url('/v1/kv?prefix=q:%25FF'))).json();
    expect(literal).toEqual({ entries: [{ key: 'q:%FF', value: 'percent' }], cursor: null });
    const replacement = await (await fetch(url('/v1/kv?prefix=q:%EF%BF%BD'))).json();
    expect(replacement).toEqual({ entries: [{ key: 'q:\ufffd', value: 'replacement' }], cursor: null });
    const twice = await fetch(url('/v1/kv?prefix=q:&prefix=x'));
    expect(await twice.json()).toMatchObject({ code: 'BAD_ARGUMENTS' });
  });
});
