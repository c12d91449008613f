// A writer for the follower tests: publishes random sets and deletes over a small key space to a change stream,
// several changes per message, and keeps the model (a plain Map of key -> value bytes) and, per key, how many
// changes touched it; plus comparisons of a follower's map with the model.

import type { MapBatch, OffHeapMap } from '@heapless/offheap';
import type { NatsConnection } from '@nats-io/nats-core';
import { pack, unpack } from 'msgpackr';
import { type Change, type ChangeMessage, ChangePublisher, deleteChange, setChange } from '../index.js';
import { retryUnavailable } from './replica-support.js';

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
    private readonly seed = 1,
  ) {
    this.publisher = new ChangePublisher(nc, { stream, schema });
    this.rng = seed;
  }

  /**
   * Publishes `messages` messages of 1 to 4 changes each; resolves once all are acknowledged. With `inFlight` 1 a
   * publish that fails with UNAVAILABLE (a node lost, NATS down) is retried with the same message id until it is
   * acknowledged, so the stream holds each message once and in the model's order.
   */
  async write(messages: number, inFlight = 32): Promise<void> {
    const pending = new Set<Promise<void>>();
    for (let i = 0; i < messages; i++) {
      const msgId = `w${this.seed}-${this.count}-${i}`;
      const changes = this.nextChanges();
      const publish =
        inFlight === 1
          ? retryUnavailable(() => this.publisher.publish(changes, { msgId }))
          : this.publisher.publish(changes, { msgId });
      const p = publish.then((ack) => {
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

/** Counts, per key, the changes applied, in the batch that applies them (so a double application shows). */
export function countApplications(
  messages: readonly ChangeMessage[],
  b: MapBatch<string, unknown>,
  map: OffHeapMap<string, unknown>,
): void {
  const counts = new Map<string, number>();
  for (const m of messages)
    for (const c of m.changes) {
      const k = COUNTER_PREFIX + c.key;
      const stored = map.getBytes(k);
      counts.set(k, (counts.get(k) ?? (stored === undefined ? 0 : (unpack(stored) as number))) + 1);
    }
  for (const [k, n] of counts) b.setBytes(k, pack(n));
}

/** The per-key counters of {@link countApplications}, by key. */
export function counters(map: OffHeapMap<string, unknown>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of map.keys())
    if (key.startsWith(COUNTER_PREFIX)) out[key.slice(COUNTER_PREFIX.length)] = unpack(map.getBytes(key)!) as number;
  return out;
}
