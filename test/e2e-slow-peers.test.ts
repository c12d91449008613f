// Issue 11 §3: slow and half-open connections are closed, with short settings: headers sent a byte at a time, a
// half-sent upgrade, an idle kept-alive connection, a WebSocket peer that answers no ping, a flood of sockets.
import { Actor, type Published, publish, spawn } from '@heapless/actor';
import { connect } from '@heapless/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedWithin, tcp, upgradeRequest } from './raw-socket.js';

class Gate extends Actor {
  static override readonly exposed = ['echo', 'hold'] as const;
  #open!: () => void;
  readonly #gate = new Promise<void>((r) => {
    this.#open = r;
  });
  echo<T>(x: T): T {
    return x;
  }
  async hold(): Promise<string> {
    await this.#gate;
    return 'held';
  }
  open(): void {
    this.#open();
  }
}

const HEARTBEAT_MS = 200;
const gate = new Gate();
const ref = spawn(gate);
let server: Published;
beforeAll(async () => {
  server = await publish(ref, {
    headersTimeoutMs: 300,
    keepAliveTimeoutMs: 200,
    heartbeatMs: HEARTBEAT_MS,
    maxInFlight: 1,
  });
});
afterAll(async () => {
  await server.close();
  await ref.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('slow and half-open connections', () => {
  it('closes connections that send their headers one byte at a time (slowloris), and serves the others', async () => {
    const request = upgradeRequest('127.0.0.1', server.port, '/v1/ws');
    const sockets = await Promise.all(Array.from({ length: 20 }, () => tcp(server.port)));
    const timers = sockets.map((s) => {
      let i = 0;
      return setInterval(() => {
        if (!s.destroyed && i < request.length - 4) s.write(request[i++]);
      }, 20);
    });
    const good = await connect<typeof Gate>(server.url);
    try {
      const received = await Promise.all(sockets.map((s) => closedWithin(s, 10_000)));
      for (const r of received) expect(r.toString()).toMatch(/^HTTP\/1\.1 408/);
      expect(await good.echo('still here')).toBe('still here');
    } finally {
      for (const t of timers) clearInterval(t);
      await good.close();
    }
  });

  it('closes a half-sent upgrade', async () => {
    const s = await tcp(server.port);
    s.write(upgradeRequest('127.0.0.1', server.port, '/v1/ws').slice(0, 60));
    expect((await closedWithin(s, 10_000)).toString()).toMatch(/^HTTP\/1\.1 408/);
  });

  it('closes a kept-alive HTTP connection left idle after its request', async () => {
    const s = await tcp(server.port);
    s.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`);
    expect((await closedWithin(s, 10_000)).toString()).toMatch(/^HTTP\/1\.1 200[\s\S]*\{"ok":true\}$/);
  });

  it('closes a WebSocket peer that answers no ping, and keeps one that does', async () => {
    const dead = await tcp(server.port);
    dead.write(upgradeRequest('127.0.0.1', server.port, '/v1/ws')); // never answers a ping: the handshake was all
    const alive = await connect<typeof Gate>(server.url, { reconnect: false });
    const received = await closedWithin(dead, 10_000);
    expect(received.toString()).toMatch(/^HTTP\/1\.1 101/);
    await sleep(HEARTBEAT_MS * 5);
    expect(await alive.echo('pong answered')).toBe('pong answered');
    await alive.close();
  });

  it('does not close a peer the server stopped reading because the actor has not answered it yet', async () => {
    const c = await connect<typeof Gate>(server.url, { reconnect: false });
    const held = c.hold(); // holds the actor: at maxInFlight 1 the server stops reading this connection
    const next = c.echo('after');
    await sleep(HEARTBEAT_MS * 5);
    gate.open();
    expect(await held).toBe('held');
    expect(await next).toBe('after');
    await c.close();
  });
});

describe('the connection cap', () => {
  it('closes connections beyond maxConnections as they arrive, and takes new ones once there is room', async () => {
    const r = spawn(new Gate());
    const s = await publish(r, { maxConnections: 3 });
    try {
      const idle = await Promise.all([1, 2, 3].map(() => tcp(s.port)));
      const extra = await tcp(s.port);
      expect((await closedWithin(extra, 10_000)).length).toBe(0);
      await expect(connect<typeof Gate>(s.url, { reconnect: false })).rejects.toMatchObject({
        code: 'CONNECT_FAILED',
      });
      idle[0].destroy();
      await sleep(100);
      const c = await connect<typeof Gate>(s.url, { reconnect: false });
      expect(await c.echo(1)).toBe(1);
      await c.close();
      for (const i of idle) i.destroy();
    } finally {
      await s.close();
      await r.stop();
    }
  });
});
