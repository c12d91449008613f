/**
 * The owner's side of sharing a map's memory with reader threads (the readers' side is shared/offheap-reader.ts; the
 * protocol is in shared/shared-control.ts): the handles, and the layout (tables, segments, msgpackr structures)
 * posted to every reader's port when it changes. The seqlock around each change is seqlock.ts.
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { FieldSpec } from '@heapless/struct';
import type { Arena } from '../memory/arena.js';
import { CTRL_CLOSED, CTRL_LAYOUT_GENERATION, CTRL_SIZE } from '../shared/shared-control.js';
import type { SharedLayout, SharedMapHandle } from '../shared/shared-handle.js';
import type { MapCodec } from './map-codec.js';
import type { MapIndex } from './map-index.js';
import type { Seqlock } from './seqlock.js';

/** What every handle of one map says about it. */
export interface ShareIdentity {
  readonly id: string;
  readonly keys: 'string' | 'bytes';
  readonly struct: FieldSpec | null;
  readonly maxSharedStructures: number;
}

/** Hands out reader handles and keeps every attached reader's layout current. */
export class MapSharing {
  private readonly ports: MessagePort[] = [];
  /** Layouts published so far: a reader holding an older generation refreshes from its port. */
  layoutGeneration = 0;

  constructor(
    private readonly seqlock: Seqlock,
    private readonly index: MapIndex,
    private readonly arena: Arena,
    private readonly codec: MapCodec,
    private readonly identity: ShareIdentity,
  ) {}

  /**
   * A handle one reader attaches to; from now on every change takes the seqlock. Its port closes when the reader
   * closes it, or when the map closes (`close`).
   */
  share(): SharedMapHandle {
    const { port1, port2 } = new MessageChannel();
    port1.unref();
    port1.on('close', () => {
      const i = this.ports.indexOf(port1);
      if (i >= 0) this.ports.splice(i, 1);
    });
    this.ports.push(port1);
    const control = this.seqlock.control;
    this.seqlock.active = true;
    Atomics.store(control, CTRL_SIZE, this.index.count);
    Atomics.store(control, CTRL_LAYOUT_GENERATION, this.layoutGeneration);
    return {
      kind: 'heapless-offheap-map',
      ...this.identity,
      control: control.buffer as SharedArrayBuffer,
      layout: this.layout(),
      port: port2,
    };
  }

  /**
   * A table, segment or structure was added or retired: posts the layout to every reader, then bumps the layout
   * generation (in that order, so a reader that sees the new generation finds the layout on its port). Must run
   * before a reader could meet a location or structure id of the new layout.
   */
  publish(): void {
    this.layoutGeneration++;
    if (this.ports.length > 0) {
      const layout = this.layout();
      for (const p of this.ports) p.postMessage(layout);
    }
    Atomics.store(this.seqlock.control, CTRL_LAYOUT_GENERATION, this.layoutGeneration);
  }

  /** Marks the memory closed for every reader and closes their ports. */
  close(): void {
    Atomics.store(this.seqlock.control, CTRL_CLOSED, 1);
    for (const p of this.ports.splice(0)) p.close();
  }

  private layout(): SharedLayout {
    const { table, old } = this.index;
    return {
      generation: this.layoutGeneration,
      table: table.sab,
      capacity: table.capacity,
      oldTable: old === null ? null : old.sab,
      oldCapacity: old === null ? 0 : old.capacity,
      segments: this.arena.buffers.slice(),
      structures: this.codec.structures(),
    };
  }
}
