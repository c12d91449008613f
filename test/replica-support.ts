// Helpers shared by the replica tests: retrying through an outage, and a handler that records what it was given.
import { type ChangeBatch, ReplicaError } from '@heapless/replica';

/**
 * Calls `f` until it does not fail with UNAVAILABLE, as a producer does while NATS comes back (each attempt is
 * bounded by the publisher's own timeout). Gives up after `attempts` tries.
 */
export async function retryUnavailable<T>(f: () => Promise<T>, attempts = 60): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await f();
    } catch (err) {
      if (!(err instanceof ReplicaError) || err.code !== 'UNAVAILABLE' || i >= attempts) throw err;
    }
  }
}

/** A handler that records every batch, with a promise for the moment a batch reaches a sequence. */
export function recorder() {
  const batches: ChangeBatch[] = [];
  const waiters: { seq: number; resolve: () => void }[] = [];
  return {
    batches,
    /** Every sequence handed over, in order. */
    seqs: () => batches.flatMap((b) => b.messages.map((m) => m.seq)),
    handler: (batch: ChangeBatch) => {
      batches.push(batch);
      for (const w of waiters.splice(0)) {
        if (batch.lastSeq >= w.seq) w.resolve();
        else waiters.push(w);
      }
    },
    /** Resolves once a batch up to `seq` or beyond was handed over. */
    reached(seq: number): Promise<void> {
      const last = batches.at(-1)?.lastSeq ?? 0;
      if (last >= seq) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ seq, resolve }));
    },
  };
}

/** `[from, from + 1, ..., to]`. */
export function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
