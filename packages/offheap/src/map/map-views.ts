/**
 * The host of a map's struct views (struct-view.ts's ViewHost): it positions views on records, re-finds a view's key
 * once arena blocks were reclaimed, and sends their in-place writes through the map's write core (map-writer.ts),
 * which publishes them to readers and persists them. A part of its own, so that this protocol between the views and
 * the map is no part of OffHeapMap's API.
 */
import type { FieldSpec } from '@heapless/struct';
import { closedError, OffHeapError, OffHeapErrorCodes } from '../errors.js';
import type { MapKey } from '../key-bytes.js';
import { type Arena, locOffset, locSegment, RECORD_HEADER_BYTES } from '../memory/arena.js';
import { type StructViewBase, type ViewHost, viewNotPositioned } from '../struct-view.js';
import type { KeyProbe, MapIndex } from './map-index.js';
import type { MapStore } from './map-store.js';
import type { MapWriter } from './map-writer.js';
import type { Seqlock } from './seqlock.js';

/** `reclaims` of a closed map: below any count (0 up) and the unpositioned mark (-1) a view can hold. */
const CLOSED_RECLAIMS = -2;

export class MapViews implements ViewHost {
  /** What `locate`'s lookups learn of their key (its own: reused). */
  private readonly probe: KeyProbe;
  private closed = false;

  constructor(
    private readonly index: MapIndex,
    private readonly arena: Arena,
    private readonly store: MapStore,
    private readonly seqlock: Seqlock,
    private readonly writer: MapWriter,
  ) {
    this.probe = index.probe();
  }

  /**
   * Blocks the store reclaimed so far: a view positioned at a lower count re-finds its key. Once the map is closed,
   * a count no view holds, so every view goes to `revalidate`, which throws CLOSED: no check on the accessors' path.
   */
  get reclaims(): number {
    return this.closed ? CLOSED_RECLAIMS : this.store.reclaims;
  }

  /** Positions `view` on `key`'s record; false (view unchanged) if `key` is absent. No allocation. */
  locate<G extends FieldSpec>(key: MapKey, view: StructViewBase<G>): boolean {
    this.writer.owe(key);
    const probe = this.probe;
    const slot = this.index.find(key, probe);
    if (slot < 0) return false;
    const loc = probe.location(slot);
    const seg = locSegment(loc);
    if (this.store.expired(seg, locOffset(loc))) return false;
    const arena = this.arena;
    const start = locOffset(loc) + RECORD_HEADER_BYTES + probe.keyLength;
    view._position(arena.u8[seg]!, arena.dv[seg]!, start, this.store.reclaims, key, loc, probe.hash);
    return true;
  }

  /** Re-finds a view's key after space was reclaimed. */
  revalidate<G extends FieldSpec>(view: StructViewBase<G>): void {
    if (view._reclaims === -1) throw new OffHeapError(OffHeapErrorCodes.VIEW_NOT_POSITIONED, 'view is not positioned');
    if (this.closed) throw closedError('map');
    if (!this.locate(view._key as MapKey, view)) throw viewNotPositioned(view._key);
  }

  /** Before an in-place field write. */
  beginWrite<G extends FieldSpec>(view: StructViewBase<G>): void {
    this.writer.checkWritable();
    this.seqlock.lock(view._hash);
  }

  /** After an in-place field write: publish and persist the record. */
  endWrite<G extends FieldSpec>(view: StructViewBase<G>): void {
    this.seqlock.unlock(view._hash);
    this.writer.written(view._loc);
  }

  /** Views positioned before see the map closed (CLOSED) from now on. */
  close(): void {
    this.closed = true;
  }
}
