import { Actor, handleOf, publish, spawn } from '@heapless/actor';
import { connect } from '@heapless/client';
import { describe, expect, it } from 'vitest';

class Gate extends Actor {
  static override readonly exposed = ['hold', 'ping'] as const;
  #open!: () => void;
  readonly #gate = new Promise<void>((r) => {
    this.#open = r;
  });
  /** Holds the mailbox until open() is called from outside. */
  async hold(_payload: Uint8Array, i: number): Promise<number> {
    await this.#gate;
    return i;
  }
  ping(): string {
    return 'pong';
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
    const server = await publish(ref, { maxInFlight });
    const c = await connect<typeof Gate>(server.url);
    const payload = new Uint8Array(16 * 1024);
    const calls: Promise<number>[] = [];
    for (let i = 0; i < 200; i++) {
      calls.push(c.hold(payload, i));
      await tick(); // one frame per call
    }
    // Give the server every chance to read more than it should (a wait, not a speed assertion).
    await new Promise((r) => setTimeout(r, 300));
    // Frames already parsed from the last socket read can still arrive after the pause: a few 16 KiB frames at most.
    const load = handleOf(ref).load;
    expect(load).toBeGreaterThanOrEqual(maxInFlight);
    expect(load).toBeLessThanOrEqual(maxInFlight + 8);
    gate.open();
    expect(await Promise.all(calls)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    await c.close();
    await server.close();
    await ref.stop();
  });

  it("answers MAILBOX_FULL over the wire when the actor's mailbox rejects, and serves the rest", async () => {
    const gate = new Gate();
    const ref = spawn(gate, { mailbox: 3, overflow: 'reject' });
    const server = await publish(ref);
    const c = await connect<typeof Gate>(server.url);
    const held = [0, 1, 2].map((i) => c.hold(new Uint8Array(1), i));
    await expect(c.ping()).rejects.toMatchObject({ code: 'MAILBOX_FULL', wire: 302 });
    gate.open();
    expect(await Promise.all(held)).toEqual([0, 1, 2]);
    expect(await c.ping()).toBe('pong');
    await c.close();
    await server.close();
    await ref.stop();
  });
});
