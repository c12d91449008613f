import type { MessagePort } from 'node:worker_threads';
import type { FieldSpec } from '@heapless/struct';
import type { Structures } from '../codec/msgpack-codec.js';

/** The memory a reader needs to see the map: posted to readers whenever it changes (see shared-control.ts). */
export interface SharedLayout {
  /** Layout generation this snapshot belongs to. */
  readonly generation: number;
  /** The index table inserts go to, and its capacity. */
  readonly table: SharedArrayBuffer;
  readonly capacity: number;
  /** The table being drained while the index grows (look there second), or null. */
  readonly oldTable: SharedArrayBuffer | null;
  readonly oldCapacity: number;
  /** Every arena segment, in location order. */
  readonly segments: readonly SharedArrayBuffer[];
  /** msgpackr shared structures (empty for struct maps). */
  readonly structures: Structures;
}

/**
 * What `map.share()` returns and `attach()` takes: plain data plus a MessagePort, so it can be posted to a worker.
 * Transfer the port: `worker.postMessage(handle, [handle.port])`. One handle serves one reader.
 */
export interface SharedMapHandle {
  readonly kind: 'heapless-offheap-map';
  /** Identifies the map (random, per map instance): a worker serving many tasks of one map attaches once. */
  readonly id: string;
  readonly keys: 'string' | 'bytes';
  /** The struct field spec for struct maps, else null. */
  readonly struct: FieldSpec | null;
  readonly maxSharedStructures: number;
  readonly control: SharedArrayBuffer;
  readonly layout: SharedLayout;
  readonly port: MessagePort;
}
