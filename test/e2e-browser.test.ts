// The browser entry of @heapless/client against a real server, with a global WebSocket as browsers have it (Node 20
// has none by default, so the test installs ws's WebSocket, which implements the same interface).
import { Actor, publish, spawn } from '@heapless/actor';
import { connect, httpClient } from '@heapless/client/browser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

class Greeter extends Actor {
  static override readonly exposed = ['greet', 'bytes'] as const;
  greet(name: string): string {
    return `hello ${name}`;
  }
  bytes(n: number): Uint8Array {
    return new Uint8Array(n).fill(n);
  }
}

const TOKEN = 'browser-token-ü';
const g = globalThis as { WebSocket?: unknown };
const saved = g.WebSocket;
let server: Awaited<ReturnType<typeof publish>>;
let ref: ReturnType<typeof spawn<Greeter>>;

beforeAll(async () => {
  g.WebSocket = WebSocket;
  ref = spawn(new Greeter());
  server = await publish(ref, { token: TOKEN });
});
afterAll(async () => {
  g.WebSocket = saved;
  await server.close();
  await ref.stop();
});

describe('browser entry', () => {
  it('connects through the global WebSocket, token as a subprotocol, and calls with types', async () => {
    const c = await connect<typeof Greeter>(server.url, { token: TOKEN });
    expect(await c.greet('browser')).toBe('hello browser');
    const b = await c.bytes(3);
    expect(b).toBeInstanceOf(Uint8Array);
    expect([...b]).toEqual([3, 3, 3]);
    await c.close();
  });

  it('is refused with UNAUTHORIZED for a wrong token', async () => {
    await expect(connect<typeof Greeter>(server.url, { token: 'nope' })).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
    });
  });

  it('fails with CONNECT_FAILED when nothing listens', async () => {
    await expect(connect<typeof Greeter>('ws://127.0.0.1:1/v1/ws', { reconnect: false })).rejects.toMatchObject({
      code: 'CONNECT_FAILED',
    });
  });

  it('has the HTTP client too', async () => {
    const h = httpClient<typeof Greeter>(server.httpUrl, { token: TOKEN });
    expect(await h.greet('fetch')).toBe('hello fetch');
  });
});
