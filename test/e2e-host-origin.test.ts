// Issue 11 §4 from a program's side: Host and Origin checks on HTTP and WebSocket, CORS for allowed origins, and the
// token kept out of the URL. test/e2e-chromium.test.ts does the same from a real browser page.
import type { Socket } from 'node:net';
import { Actor, ActorError, type Published, publish, spawn } from '@heapless/actor';
import { connect } from '@heapless/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { closedBy, tcp } from './raw-socket.js';

class Echo extends Actor {
  static override readonly exposed = ['echo'] as const;
  echo<T>(x: T): T {
    return x;
  }
}

const TOKEN = 'host-origin-token';
const PAGE = 'http://app.localhost:5173';
const ref = spawn(new Echo());
let open: Published; // no token, no allowed origin: the default a developer starts
let guarded: Published; // a token, one allowed origin, one allowed host name
beforeAll(async () => {
  open = await publish(ref);
  guarded = await publish(ref, { token: TOKEN, allowedOrigins: [PAGE], allowedHosts: ['kv.internal'] });
});
afterAll(async () => {
  await open.close();
  await guarded.close();
  await ref.stop();
});

/** A raw HTTP/1.1 request with exactly these headers (fetch would not let a test set Host), and its answer. */
async function raw(port: number, head: string, body = ''): Promise<{ status: number; headers: string; body: string }> {
  const s: Socket = await tcp(port);
  const text = closedBy(s);
  s.end(`${head}\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  const answer = (await text).toString();
  const [headers, rest] = answer.split('\r\n\r\n');
  return { status: Number(headers.split(' ')[1]), headers: headers.toLowerCase(), body: rest ?? '' };
}

/** The close code and reason of a WebSocket upgrade with these headers, or 'open' if it got the hello. */
function upgrade(url: string, headers: Record<string, string>): Promise<[number, string] | 'open'> {
  const ws = new WebSocket(url, ['heapless.v1'], { headers });
  return new Promise((resolve, reject) => {
    ws.on('error', reject);
    ws.on('message', () => {
      resolve('open');
      ws.close();
    });
    ws.on('close', (code, reason) => resolve([code, reason.toString()]));
  });
}

const call = (host: string, extra = '') =>
  `POST /v1/call/echo HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json${extra}`;

describe('Host', () => {
  it('answers loopback names and IP addresses, and refuses any other name with 421 (DNS rebinding)', async () => {
    const port = open.port;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `app.localhost:${port}`]) {
      expect((await raw(port, call(host), '["x"]')).status, host).toBe(200);
    }
    for (const host of [`evil.example:${port}`, 'evil.example', `127.0.0.1.evil.example:${port}`]) {
      const r = await raw(port, call(host), '["x"]');
      expect(r.status, host).toBe(421);
      expect(JSON.parse(r.body)).toMatchObject({ code: 'HOST_NOT_ALLOWED', wire: 201 });
    }
    expect((await raw(port, `GET /healthz HTTP/1.1\r\nHost: evil.example`)).status).toBe(421);
  });

  it('answers a configured name', async () => {
    const r = await raw(guarded.port, call('kv.internal:7070', `\r\nAuthorization: Bearer ${TOKEN}`), '["x"]');
    expect(r.status).toBe(200);
  });

  it('closes a WebSocket upgrade naming another host with 4403 HOST_NOT_ALLOWED', async () => {
    expect(await upgrade(open.url, { host: 'evil.example' })).toEqual([4403, 'HOST_NOT_ALLOWED']);
    expect(await upgrade(open.url, {})).toBe('open');
  });
});

describe('Origin', () => {
  it('refuses a page of another origin on a server that allows none: HTTP 403, WebSocket 4403', async () => {
    const host = `127.0.0.1:${open.port}`;
    const r = await raw(open.port, call(host, '\r\nOrigin: https://evil.example'), '["x"]');
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body)).toMatchObject({ code: 'ORIGIN_NOT_ALLOWED', wire: 202 });
    expect(r.headers).not.toContain('access-control-allow-origin');
    expect(await upgrade(open.url, { origin: 'https://evil.example' })).toEqual([4403, 'ORIGIN_NOT_ALLOWED']);
    const program = await connect<typeof Echo>(open.url); // no Origin: a program, served
    expect(await program.echo(1)).toBe(1);
    await program.close();
  });

  it('serves an allowed origin with CORS: preflight without a token, answers and errors readable', async () => {
    const host = `127.0.0.1:${guarded.port}`;
    const pre = await raw(
      guarded.port,
      `OPTIONS /v1/call/echo HTTP/1.1\r\nHost: ${host}\r\nOrigin: ${PAGE}\r\nAccess-Control-Request-Method: POST\r\n` +
        'Access-Control-Request-Headers: authorization, content-type',
    );
    expect(pre.status).toBe(204);
    expect(pre.headers).toContain(`access-control-allow-origin: ${PAGE}`);
    expect(pre.headers).toMatch(/access-control-allow-headers: [^\r]*authorization/);
    expect(pre.headers).toMatch(/access-control-allow-methods: [^\r]*post/);
    const ok = await raw(guarded.port, call(host, `\r\nOrigin: ${PAGE}\r\nAuthorization: Bearer ${TOKEN}`), '["y"]');
    expect(ok.status).toBe(200);
    expect(ok.body).toBe('"y"');
    expect(ok.headers).toContain(`access-control-allow-origin: ${PAGE}`);
    expect(ok.headers).toContain('vary: origin');
    // What the page needs to read of an error is exposed: a 415 says in `Accept` what the route takes.
    const badType = await raw(
      guarded.port,
      `POST /v1/call/echo HTTP/1.1\r\nHost: ${host}\r\nContent-Type: text/plain\r\nOrigin: ${PAGE}\r\n` +
        `Authorization: Bearer ${TOKEN}`,
      'y',
    );
    expect(badType.status).toBe(415);
    expect(badType.headers).toMatch(/\r\naccept: [^\r]*application\/json/);
    expect(badType.headers).toMatch(/access-control-expose-headers: [^\r]*accept/);
    const noToken = await raw(guarded.port, call(host, `\r\nOrigin: ${PAGE}`), '["y"]');
    expect(noToken.status).toBe(401);
    expect(noToken.headers).toContain(`access-control-allow-origin: ${PAGE}`);
    const other = await raw(guarded.port, call(host, `\r\nOrigin: ${PAGE}0\r\nAuthorization: Bearer ${TOKEN}`), '[1]');
    expect(other.status).toBe(403);
    expect(
      await upgrade(guarded.url, {
        origin: PAGE,
        'sec-websocket-protocol': 'heapless.v1',
        authorization: `Bearer ${TOKEN}`,
      }),
    ).toBe('open');
  });

  it('refuses an allowed origin that is not a bare origin when publishing', async () => {
    const r = spawn(new Echo());
    for (const bad of ['https://app.example/', 'app.example', 'https://app.example/path']) {
      const err = await publish(r, { allowedOrigins: [bad] }).catch((e: unknown) => e);
      expect(err, bad).toBeInstanceOf(ActorError);
      expect((err as ActorError).code).toBe('HEAPLESS_ERR_ACTOR_INVALID_OPTION');
    }
    await r.stop();
  });
});

describe('the token in the URL', () => {
  it('is not accepted unless allowTokenInQuery says so', async () => {
    expect(await upgrade(`${guarded.url}?token=${TOKEN}`, {})).toEqual([4401, 'UNAUTHORIZED']);
    const r = spawn(new Echo());
    const s = await publish(r, { token: TOKEN, allowTokenInQuery: true });
    expect(await upgrade(`${s.url}?token=${TOKEN}`, {})).toBe('open');
    await s.close();
    await r.stop();
  });
});
