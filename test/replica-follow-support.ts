// A writer for the follower tests: publishes random sets and deletes over a small key space to a change stream,
// several changes per message, and keeps the model (a plain Map of key -> value bytes) and, per key, how many
// changes touched it; plus comparisons of a follower's map with the model.

import type { OffHeapMap } from '@heapless/offheap';
import { type Change, ChangePublisher, deleteChange, setChange } from '@heapless/replica';
import type { NatsConnection } from '@nats-io/nats-core';
import { pack } from 'msgpackr';

/** The prefix of the per-key application counters a test follower adds in `onBatch`. */
export const COUNTER_PREFIX = 'applied:';

export class ModelWriter {
  readonly model = new Map<string, Uint8Array>();
  /** Per key: changes published that touch it (what an exact application counts). */
  readonly touches = new Map<string, number>();
  private readonly publisher: ChangePublisher;
  private rng: number;
  private count = 0;
  lastSeq = 0;

  constructor(
    nc: NatsConnection,
    stream: string,
    schema: string,
    private readonly keys = 500,
    seed = 1,
  ) {
    this.publisher = new ChangePublisher(nc, { stream, schema });
    this.rng = seed;
  }

  /** Publishes `messages` messages of 1 to 4 changes each; resolves once all are acknowledged. */
  async write(messages: number, inFlight = 32): Promise<void> {
    const pending = new Set<Promise<void>>();
    for (let i = 0; i < messages; i++) {
      const changes = this.nextChanges();
      const p = this.publisher.publish(changes).then((ack) => {
        if (ack.seq > this.lastSeq) this.lastSeq = ack.seq;
        pending.delete(p);
      });
      pending.add(p);
      if (pending.size >= inFlight) await Promise.race(pending);
    }
    await Promise.all(pending);
  }

  /** The next message's changes, applied to the model now (publishes are acknowledged in order per connection). */
  private nextChanges(): Change[] {
    const n = 1 + (this.random() % 4);
    const changes: Change[] = [];
    for (let j = 0; j < n; j++) {
      const key = `k${this.random() % this.keys}`;
      this.touches.set(key, (this.touches.get(key) ?? 0) + 1);
      if (this.random() % 5 === 0) {
        changes.push(deleteChange(key));
        this.model.delete(key);
      } else {
        const value = pack({ key, n: this.count++, pad: 'x'.repeat(this.random() % 40) });
        changes.push(setChange(key, value));
        this.model.set(key, value);
      }
    }
    return changes;
  }

  private random(): number {
    // xorshift32: deterministic per seed
    let x = this.rng;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.rng = x >>> 0;
    return this.rng;
  }
}

/** The map's records (counters left out) as hex, by key: compared with {@link modelHex}. */
export function mapHex(map: OffHeapMap<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of map.keys()) {
    if (key.startsWith(COUNTER_PREFIX)) continue;
    out[key] = Buffer.from(map.getBytes(key)!).toString('hex');
  }
  return out;
}

export function modelHex(model: Map<string, Uint8Array>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of model) out[k] = Buffer.from(v).toString('hex');
  return out;
}
