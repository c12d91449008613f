// Helpers shared by the replica tests: servers and a connection per test file, the code a call fails with,
// retrying through an outage, a gate that holds a handler, a handler that records what it was given, and
// directories to upload and compare.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OffHeapMap } from '@heapless/offheap';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { type ChangeBatch, connectToNats, ReplicaError, type ReplicaErrorCode } from '../index.js';
import type { NatsServers } from './nats-server.js';

/**
 * Starts servers with `start` and connects to them before the file's tests, and closes both after them; the
 * returned object's fields are set once `beforeAll` has run.
 */
export function natsForTests(start: () => Promise<NatsServers>): { nats: NatsServers; nc: NatsConnection } {
  const shared = {} as { nats: NatsServers; nc: NatsConnection };
  beforeAll(async () => {
    shared.nats = await start();
    shared.nc = await connectToNats({ servers: shared.nats.urls });
  });
  afterAll(async () => {
    await shared.nc?.close();
    await shared.nats?.close();
  });
  return shared;
}

/** The code of the ReplicaError `p` rejects with; fails the test if it resolves or rejects with anything else. */
export async function rejectionCode(p: Promise<unknown>): Promise<ReplicaErrorCode> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ReplicaError);
    return (err as ReplicaError).code;
  }
  throw new Error('expected a ReplicaError');
}

/** A promise that stays pending until `open()`, to hold a handler where a test wants it. */
export function gate(): { closed: Promise<void>; open: () => void } {
  let open!: () => void;
  const closed = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { closed, open };
}

/**
 * Calls `f` until it does not fail with UNAVAILABLE, as a producer does while NATS comes back (each attempt is
 * bounded by the publisher's own timeout). Gives up after `attempts` tries.
 */
export async function retryUnavailable<T>(f: () => Promise<T>, attempts = 60): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await f();
    } catch (err) {
      if (!(err instanceof ReplicaError) || err.code !== 'HEAPLESS_ERR_REPLICA_UNAVAILABLE' || i >= attempts) throw err;
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

/** Every file under `dir` with its bytes in hex, by relative path. */
export function dirContents(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = join(entry.parentPath, entry.name);
    out[full.slice(dir.length + 1)] = readFileSync(full).toString('hex');
  }
  return out;
}

/** A closed map in `dir` with `records` records (its image written at close), and the model of them. */
export async function closedMap(dir: string, records: number): Promise<Map<string, string>> {
  const map = await OffHeapMap.open<string, string>({ dir });
  const model = new Map<string, string>();
  for (let i = 0; i < records; i++) {
    const value = `value ${i} `.repeat(1 + (i % 20));
    map.set(`key${i}`, value);
    model.set(`key${i}`, value);
  }
  await map.close();
  return model;
}
