import { Actor, handleOf, Metrics, publish, spawn } from '@heapless/actor';
import { connect } from '@heapless/client';
import { pack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { clientFrame, tcp, until, upgradeRequest } from './raw-socket.js';

class Gate extends Actor {
  static override readonly exposed = ['hold', 'ping', 'record', 'big'] as const;
  #open!: () => void;
  readonly #gate = new Promise<void>((r) => {
    this.#open = r;
  });
  readonly log: string[] = [];
  bigCalls = 0;
  /** Holds the mailbox until open() is called from outside. */
  async hold(_payload: Uint8Array, i: number): Promise<number> {
    await this.#gate;
    return i;
  }
  ping(): string {
    return 'pong';
  }
  record(tag: string): void {
    this.log.push(tag);
  }
  /** A reply of `n` bytes. */
  big(n: number): Uint8Array {
    this.bigCalls++;
    return new Uint8Array(n);
  }
  open(): void {
    this.#open();
  }
}

const tick = () => new Promise((r) => setImmediate(r));

describe('backpressure', () => {
  it('stops reading a connection at maxInFlight instead of buffering its calls', async () => {
    const gate = new Gate();
    const ref = spawn(gate, { mailbox: 10_000 });
    const maxInFlight = 8;
    const metrics = new Metrics();
    const server = await publish(ref, { maxInFlight, metrics });
    const c = await connect<typeof Gate>(server.url);
    const payload = new Uint8Array(16 * 1024);
    const calls: Promise<number>[] = [];
    for (let i = 0; i < 200; i++) {
      calls.push(c.hold(payload, i));
      await tick(); // one frame per call
    }
    await until(() => metrics.connectionLoad!().paused === 1, 'the server stops reading');
    // Give the server every chance to read more than it should (a wait, not a speed assertion).
    await new Promise((r) => setTimeout(r, 300));
    // Frames already parsed from the last socket read can still arrive after the pause: a few 16 KiB frames at most.
    const read = metrics.connectionLoad!().requestBytes;
    expect(read).toBeGreaterThanOrEqual(maxInFlight * payload.length);
    expect(read).toBeLessThanOrEqual((maxInFlight + 8) * (payload.length + 64));
    gate.open();
    expect(await Promise.all(calls)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    await c.close();
    await server.close();
    await ref.stop();
    metrics.close();
  });

  it('gives the actor one waiting call per connection, so that connections take turns', async () => {
    const gate = new Gate();
    const ref = spawn(gate, { mailbox: 10_000 });
    const server = await publish(ref);
    const [holder, a, b] = await Promise.all([1, 2, 3].map(() => connect<typeof Gate>(server.url)));
    const held = holder.hold(new Uint8Array(1), 0); // holds the mailbox
    await until(() => handleOf(ref).load === 1, 'the mailbox is held');
    const calls = [
      ...Array.from({ length: 5 }, () => a.record('a')),
      ...Array.from({ length: 5 }, () => b.record('b')),
    ];
    // Each connection has posted its first call; the other four wait in its session, not in the mailbox.
    await until(() => handleOf(ref).load === 3, 'both first calls are in the mailbox');
    await new Promise((r) => setTimeout(r, 100));
    expect(handleOf(ref).load).toBe(3);
    gate.open();
    await Promise.all([held, ...calls]);
    expect(gate.log.join('')).toBe('ababababab');
    await Promise.all([holder.close(), a.close(), b.close()]);
    await server.close();
    await ref.stop();
  });

  it('stops running the calls of a client that does not read its replies, at maxReplyBytes', async () => {
    const gate = new Gate();
    const ref = spawn(gate, { mailbox: 10_000 });
    const metrics = new Metrics();
    const maxReplyBytes = 1024 * 1024;
    const server = await publish(ref, { metrics, maxReplyBytes });
    const socket = await tcp(server.port);
    socket.pause(); // never reads: not even the handshake's answer
    socket.write(upgradeRequest('127.0.0.1', server.port, '/v1/ws'));
    const size = 256 * 1024;
    const n = 4096;
    for (let f = 0; f < n / 256; f++) {
      socket.write(clientFrame(pack(Array.from({ length: 256 }, (_, i) => [f * 256 + i + 1, 'big', [size]]))));
    }
    await until(() => metrics.connectionLoad!().paused === 1, 'the server stops reading');
    // Let the kernel's buffers fill up and the server settle (a wait, not a speed assertion).
    let last = -1;
    await until(
      () => {
        const settled = gate.bigCalls === last;
        last = gate.bigCalls;
        return settled;
      },
      'the server stops running calls',
      30_000,
      300,
    );
    const { replyBytes } = metrics.connectionLoad!();
    // What waits in user space is bounded by the cap and one reply; what the kernel buffers (a few MiB on
    // loopback) is all that was run beyond it.
    expect(replyBytes).toBeLessThanOrEqual(maxReplyBytes + size + 64);
    expect(gate.bigCalls).toBeLessThan(n / 8);
    // Another client is served meanwhile.
    const other = await connect<typeof Gate>(server.url, { timeoutMs: 10_000 });
    expect(await other.ping()).toBe('pong');
    expect((await other.big(size)).length).toBe(size);
    await other.close();
    socket.destroy();
    await server.close();
    await ref.stop();
    metrics.close();
  });

  it("answers MAILBOX_FULL over the wire when the actor's mailbox rejects, and serves the rest", async () => {
    const gate = new Gate();
    const ref = spawn(gate, { mailbox: 3, overflow: 'reject' });
    const server = await publish(ref);
    // One connection has at most one call waiting in the mailbox: three connections fill it.
    const clients = await Promise.all([0, 1, 2, 3].map(() => connect<typeof Gate>(server.url)));
    const held = [0, 1, 2].map((i) => clients[i].hold(new Uint8Array(1), i));
    await until(() => handleOf(ref).load === 3, 'the mailbox is full');
    await expect(clients[3].ping()).rejects.toMatchObject({ code: 'MAILBOX_FULL', wire: 302 });
    gate.open();
    expect(await Promise.all(held)).toEqual([0, 1, 2]);
    expect(await clients[3].ping()).toBe('pong');
    await Promise.all(clients.map((c) => c.close()));
    await server.close();
    await ref.stop();
  });
});
