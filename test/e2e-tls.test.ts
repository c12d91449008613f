// Issue 11 §5: HTTPS and WSS on the one port with a certificate the test makes (openssl, installed by
// scripts/system-deps.mjs), clients that trust it through `ca`, and no clear text off loopback unless asked.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Actor, ActorError, type Published, publish, spawn } from '@heapless/actor';
import { connect, httpClient } from '@heapless/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedWithin, tcp } from './raw-socket.js';
import { selfSigned } from './self-signed.js';
import { type Child, startServe } from './serve-child.js';

class Echo extends Actor {
  static override readonly exposed = ['echo'] as const;
  echo<T>(x: T): T {
    return x;
  }
}

const TOKEN = 'tls-token';
const dir = mkdtempSync(join(tmpdir(), 'heapless-tls-'));
const { certFile, keyFile, cert, key } = selfSigned(dir);

const ref = spawn(new Echo());
let server: Published;
const children: Child[] = [];
beforeAll(async () => {
  server = await publish(ref, { token: TOKEN, tls: { cert, key } });
});
afterAll(async () => {
  for (const c of children) c.proc.kill('SIGKILL');
  await server.close();
  await ref.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('TLS', () => {
  it('serves WSS and HTTPS on one port to clients that trust the certificate', async () => {
    expect(server.url).toBe(`wss://127.0.0.1:${server.port}/v1/ws`);
    expect(server.httpUrl).toBe(`https://127.0.0.1:${server.port}`);
    const ws = await connect<typeof Echo>(server.url, { token: TOKEN, ca: cert });
    expect(await ws.echo('over wss')).toBe('over wss');
    await ws.close();
    const https = httpClient<typeof Echo>(server.httpUrl, { token: TOKEN, ca: cert });
    expect(await https.echo('over https')).toBe('over https');
    // The name in the certificate is checked too.
    const byName = httpClient<typeof Echo>(`https://localhost:${server.port}`, { token: TOKEN, ca: cert });
    expect(await byName.echo({ a: 1 })).toEqual({ a: 1 });
  });

  it('trusts a certificate given as plain bytes (a Uint8Array, not a Buffer), over WSS and HTTPS', async () => {
    const bytes = new Uint8Array(cert);
    const ws = await connect<typeof Echo>(server.url, { token: TOKEN, ca: [bytes] });
    expect(await ws.echo('bytes')).toBe('bytes');
    await ws.close();
    expect(await httpClient<typeof Echo>(server.httpUrl, { token: TOKEN, ca: bytes }).echo(2)).toBe(2);
  });

  it('is refused by clients that do not trust the certificate, and speaks no clear text', async () => {
    await expect(connect<typeof Echo>(server.url, { token: TOKEN, reconnect: false })).rejects.toMatchObject({
      code: 'CONNECT_FAILED',
    });
    await expect(httpClient<typeof Echo>(server.httpUrl, { token: TOKEN }).echo(1)).rejects.toMatchObject({
      code: 'CONNECTION_LOST',
    });
    await expect(
      connect<typeof Echo>(`ws://127.0.0.1:${server.port}/v1/ws`, { token: TOKEN, reconnect: false }),
    ).rejects.toMatchObject({ code: 'CONNECT_FAILED' });
    await expect(
      httpClient<typeof Echo>(`http://127.0.0.1:${server.port}`, { token: TOKEN, timeoutMs: 5000 }).echo(1),
    ).rejects.toMatchObject({ code: expect.stringMatching(/^(CONNECTION_LOST|BAD_FRAME)$/) });
  });

  it('refuses to listen off loopback without TLS unless insecure, and refuses a bad certificate', async () => {
    const r = spawn(new Echo());
    const err = await publish(r, { host: '0.0.0.0', token: TOKEN }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ActorError);
    expect((err as ActorError).code).toBe('HEAPLESS_ERR_ACTOR_INSECURE_BIND');
    expect((err as Error).message).toMatch(/without TLS/);
    const bad = await publish(r, { tls: { cert: 'not a certificate', key } }).catch((e: unknown) => e);
    expect((bad as ActorError).code).toBe('HEAPLESS_ERR_ACTOR_INVALID_OPTION');
    const insecure = await publish(r, { host: '0.0.0.0', token: TOKEN, insecure: true });
    const c = await connect<typeof Echo>(`ws://127.0.0.1:${insecure.port}/v1/ws`, { token: TOKEN });
    expect(await c.echo('clear')).toBe('clear');
    await c.close();
    await insecure.close();
    await r.stop();
  });

  it('heapless serve --tls-cert --tls-key serves WSS; off loopback it will not start in clear text', async () => {
    const s = await startServe(['--memory', '--tls-cert', certFile, '--tls-key', keyFile]);
    children.push(s);
    expect(s.url).toMatch(/^wss:\/\/127\.0\.0\.1:\d+\/v1\/ws$/);
    const kv = await connect<{ size(): number }>(s.url, { ca: cert });
    expect(await kv.size()).toBe(0);
    await kv.close();
    const refused = startServe(['--memory', '--host', '0.0.0.0'], { HEAPLESS_TOKEN: TOKEN });
    await expect(refused).rejects.toThrow(
      /exited with 1: heapless: HEAPLESS_ERR_ACTOR_INSECURE_BIND: refusing to listen on 0\.0\.0\.0 without TLS/,
    );
  });

  it('heapless serve closes a peer that does not finish its TLS handshake within the headers timeout', async () => {
    // Node times the headers only once the handshake is done; the handshake has its own timeout, 120 s unless set.
    const headersTimeoutMs = 2000;
    const s = await startServe([
      '--memory',
      '--tls-cert',
      certFile,
      '--tls-key',
      keyFile,
      '--headers-timeout',
      String(headersTimeoutMs),
    ]);
    children.push(s);
    const port = Number(new URL(s.httpUrl).port);
    const [silent, partial] = await Promise.all([tcp(port), tcp(port)]);
    const connected = performance.now();
    partial.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01])); // the start of a ClientHello
    // 1.25 times the timeout: the handshake timer is the socket's own, so only a busy event loop can make it late.
    const bound = headersTimeoutMs * 1.25;
    await Promise.all([closedWithin(silent, bound), closedWithin(partial, bound)]);
    expect(performance.now() - connected).toBeGreaterThan(headersTimeoutMs - 100);
  });
});
