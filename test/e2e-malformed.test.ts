import { Actor, ActorError, type Published, publish, spawn } from '@heapless/actor';
import { connect, HeaplessError } from '@heapless/client';
import fc from 'fast-check';
import { pack, unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

class Echo extends Actor {
  static override readonly exposed = ['echo'] as const;
  echo<T>(x: T): T {
    return x;
  }
}

const TOKEN = 'correct horse battery staple';
let server: Published;
let stopActor: () => Promise<void>;
// A well-behaved client that must notice nothing while the others misbehave.
let good: Awaited<ReturnType<typeof connect<typeof Echo>>>;

beforeAll(async () => {
  const ref = spawn(new Echo());
  stopActor = () => ref.stop();
  server = await publish(ref, { token: TOKEN, maxFrameBytes: 4096, maxCallsPerFrame: 8, maxBodyBytes: 1024 });
  good = await connect<typeof Echo>(server.url, { token: TOKEN });
});
afterAll(async () => {
  await good.close();
  await server.close();
  await stopActor();
});

/** Opens a raw socket, waits for the hello, sends `frame`, and resolves with the close or the first reply frame. */
function exchange(
  frame: Uint8Array | string,
  opts: { token?: string | null; protocols?: string[] } = {},
): Promise<{ close?: [number, string]; reply?: unknown }> {
  const token = opts.token === undefined ? TOKEN : opts.token;
  const ws = new WebSocket(server.url, opts.protocols ?? ['heapless.v1'], {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  return new Promise((resolve, reject) => {
    let hello = false;
    ws.on('error', reject);
    ws.on('close', (code, reason) => resolve({ close: [code, reason.toString()] }));
    ws.on('message', (data) => {
      if (!hello) {
        hello = true;
        ws.send(frame, { binary: typeof frame !== 'string' });
        return;
      }
      resolve({ reply: unpack(data as Buffer) });
      ws.close();
    });
  });
}

async function stillServing(): Promise<void> {
  expect(await good.echo('still here')).toBe('still here');
}

describe('malformed input over WebSocket', () => {
  const cases: [string, Uint8Array | string, [number, string]][] = [
    ['bytes that are not msgpack', new Uint8Array([0xc1, 0xff]), [1007, 'BAD_FRAME']],
    ['a frame that is not an array', pack({ id: 1, method: 'echo' }), [1007, 'BAD_FRAME']],
    ['a call without an id', pack([['echo', []]]), [1007, 'BAD_FRAME']],
    ['trailing garbage', Uint8Array.from([...pack([[1, 'echo', [1]]]), 0]), [1007, 'BAD_FRAME']],
    [
      'too many calls in one frame',
      pack(Array.from({ length: 9 }, (_, i) => [i + 1, 'echo', [i]])),
      [1008, 'TOO_MANY_CALLS'],
    ],
    ['a frame over maxFrameBytes', pack([[1, 'echo', ['x'.repeat(5000)]]]), [1009, '']],
    ['a text frame', '[[1,"echo",[1]]]', [1003, 'TEXT_FRAME']],
  ];
  for (const [what, frame, close] of cases) {
    it(`closes on ${what} with ${close[0]}`, async () => {
      expect(await exchange(frame)).toEqual({ close });
      await stillServing();
    });
  }

  it('survives arbitrary frames: each gets a reply or a close code, and the server keeps serving', async () => {
    const frames = fc.oneof(
      fc.uint8Array({ maxLength: 512 }),
      fc.anything().map((v) => pack(v) as Uint8Array),
      fc
        .array(fc.tuple(fc.nat(), fc.oneof(fc.constant('echo'), fc.string()), fc.anything()), { maxLength: 6 })
        .map((v) => pack(v) as Uint8Array),
    );
    await fc.assert(
      fc.asyncProperty(frames, async (frame) => {
        let empty = false;
        try {
          const v = unpack(frame);
          empty = Array.isArray(v) && v.length === 0;
        } catch {}
        fc.pre(!empty); // a frame of no calls has no reply to wait for
        const out = await exchange(frame);
        if (out.close !== undefined) expect([1007, 1008, 1009]).toContain(out.close[0]);
        else expect(Array.isArray(out.reply)).toBe(true);
      }),
      { numRuns: 60 },
    );
    await stillServing();
  });

  it('answers a call of the wrong shape with BAD_REQUEST and the next one normally', async () => {
    const { reply } = await exchange(
      pack([
        [1, 42, []],
        [2, 'echo', 'not an array'],
        [3, 'echo', ['ok']],
      ]),
    );
    expect(reply).toEqual([
      [1, 101, expect.any(String)],
      [2, 101, expect.any(String)],
      [3, 'ok'],
    ]);
  });

  it('answers unknown methods, inherited ones included, with UNKNOWN_METHOD', async () => {
    const { reply } = await exchange(
      pack([
        [1, 'nope', []],
        [2, 'onStop', []],
        [3, 'constructor', []],
        [4, '__proto__', []],
      ]),
    );
    expect((reply as unknown[][]).map((r) => r[1])).toEqual([102, 102, 102, 102]);
  });

  it('refuses a connection without the heapless.v1 subprotocol with UNSUPPORTED_PROTOCOL, token or not', async () => {
    // None offered: the handshake completes and the server closes at once with 1002.
    expect(await exchange(pack([]), { protocols: [] })).toEqual({ close: [1002, 'UNSUPPORTED_PROTOCOL'] });
    expect(await exchange(pack([]), { protocols: [], token: null })).toEqual({ close: [1002, 'UNSUPPORTED_PROTOCOL'] });
    // Others only: 400 with the error body (a client fails any handshake that selects none of its subprotocols).
    for (const protocols of [['heapless.v2'], ['chat', 'superchat'], ['heapless.token.eA']]) {
      const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const ws = new WebSocket(server.url, protocols, { headers: { authorization: `Bearer ${TOKEN}` } });
        ws.on('open', () => reject(new Error('connected without heapless.v1')));
        ws.on('error', () => {});
        ws.on('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (c: Buffer) => {
            body += c.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
      });
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'UNSUPPORTED_PROTOCOL', wire: 111 });
    }
    await stillServing();
  });

  it('closes a connection without the right token with 4401, whichever way it is sent', async () => {
    expect(await exchange(pack([]), { token: null })).toEqual({ close: [4401, 'UNAUTHORIZED'] });
    expect(await exchange(pack([]), { token: 'wrong' })).toEqual({ close: [4401, 'UNAUTHORIZED'] });
    await expect(connect<typeof Echo>(server.url, { token: 'wrong' })).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
      closeCode: 4401,
    });
    await stillServing();
  });

  it('fails a call too large for one frame locally, without sending it', async () => {
    const err = await good.echo('y'.repeat(10_000)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HeaplessError);
    expect((err as HeaplessError).code).toBe('CALL_TOO_LARGE');
    await stillServing();
  });
});

describe('malformed input over HTTP', () => {
  const post = (path: string, body: string | Uint8Array, type: string, token: string | null = TOKEN) =>
    fetch(`${server.httpUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': type, ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
      body,
    });
  const cases: [string, () => Promise<Response>, number, string][] = [
    ['a body that is not JSON', () => post('/v1/call/echo', '[1,', 'application/json'), 400, 'BAD_FRAME'],
    [
      'a body that is not msgpack',
      () => post('/v1/call/echo', new Uint8Array([0x92, 0x01]), 'application/msgpack'),
      400,
      'BAD_FRAME',
    ],
    ['args that are not an array', () => post('/v1/call/echo', '{"a":1}', 'application/json'), 400, 'BAD_REQUEST'],
    ['an unknown method', () => post('/v1/call/nope', '[]', 'application/json'), 404, 'UNKNOWN_METHOD'],
    [
      'a body over maxBodyBytes',
      () => post('/v1/call/echo', JSON.stringify(['z'.repeat(2000)]), 'application/json'),
      413,
      'BODY_TOO_LARGE',
    ],
    ['an unsupported content type', () => post('/v1/call/echo', 'hi', 'text/plain'), 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['no token', () => post('/v1/call/echo', '[1]', 'application/json', null), 401, 'UNAUTHORIZED'],
    ['a wrong token', () => post('/v1/call/echo', '[1]', 'application/json', 'nope'), 401, 'UNAUTHORIZED'],
  ];
  for (const [what, send, status, code] of cases) {
    it(`answers ${what} with ${status} ${code}`, async () => {
      const res = await send();
      expect(res.status).toBe(status);
      expect(await res.json()).toMatchObject({ code, wire: expect.any(Number), message: expect.any(String) });
      await stillServing();
    });
  }

  it('serves /healthz without a token', async () => {
    const res = await fetch(`${server.httpUrl}/healthz`);
    expect(await res.json()).toEqual({ ok: true });
  });
});

describe('publish', () => {
  it('refuses a non-loopback host without a token', async () => {
    const ref = spawn(new Echo());
    const err = await publish(ref, { host: '0.0.0.0' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ActorError);
    expect((err as ActorError).code).toBe('HEAPLESS_ERR_ACTOR_INSECURE_BIND');
    await ref.stop();
  });
});
