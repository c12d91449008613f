import {
  defineFieldAccessors,
  type FieldLayout,
  type FieldSpec,
  StructArray,
  type StructLayout,
  StructViewCore,
  type ViewFields,
} from '@heapless/struct';
import { invalidArgument, OffHeapError, OffHeapErrorCodes } from './errors.js';

/**
 * Flyweight views over struct records in the map's arena (or a reader's private copy), on `@heapless/struct`'s view
 * skeleton. Unlike the client's views, which read bytes nobody else writes, these check their host's reclaim count
 * before each access: arena space can be reclaimed under them, and the host re-finds the record (or throws
 * VIEW_NOT_POSITIONED). Writes go through the host, which publishes them to readers and persists them.
 */

export { StructArray };

/** A flyweight over one record's bytes: reading a field decodes just that field, assigning writes it in place. */
export type StructView<F extends FieldSpec> = ViewFields<F> & StructViewBase<F>;

/**
 * What a view is positioned by: an `OffHeapMap` (read-write, persisted) or an attached reader (read-only, over a
 * private copy). `reclaims` counts the host's reclaimed arena blocks, so a view can tell its record may have moved.
 */
export interface ViewHost {
  readonly reclaims: number;
  /** Re-positions `view` on the current record of its key, or throws VIEW_NOT_POSITIONED. */
  revalidate<G extends FieldSpec>(view: StructViewBase<G>): void;
  /** Called before an in-place write (readers throw READ_ONLY). */
  beginWrite<G extends FieldSpec>(view: StructViewBase<G>): void;
  /** Called after an in-place write (the map publishes it to readers and persists the record). */
  endWrite<G extends FieldSpec>(view: StructViewBase<G>): void;
}

/** State and methods shared by every view; fields prefixed `_` belong to the host and are not public API. */
export class StructViewBase<F extends FieldSpec> extends StructViewCore<F> {
  /** The host's `reclaims` when the view was positioned; -1 when not positioned. */
  _reclaims: number;
  /** The key the view is positioned on (host-specific), undefined when not positioned. */
  _key: unknown;
  /** Arena location of the record (host-specific). */
  _loc: number;
  /** Hash of the key (for the host's reader lock). */
  _hash: number;
  readonly _host: ViewHost;

  constructor(type: StructLayout<F>, host: ViewHost) {
    super(type, EMPTY_U8, EMPTY_DV, 0);
    this._reclaims = -1;
    this._key = undefined;
    this._loc = 0;
    this._hash = 0;
    this._host = host;
  }

  /** Points the view at `off` in `u8`/`dv`; used by hosts. */
  _position(u8: Uint8Array, dv: DataView, off: number, seen: number, key: unknown, loc: number, hash: number): void {
    this._u8 = u8;
    this._dv = dv;
    this._off = off;
    this._reclaims = seen;
    this._key = key;
    this._loc = loc;
    this._hash = hash;
  }

  /** Re-finds the record when the host reclaimed arena space since the view was positioned. */
  override _sync(): void {
    if (this._reclaims !== this._host.reclaims) this._host.revalidate(this);
  }

  override _beginWrite(): void {
    this._host.beginWrite(this);
  }

  override _endWrite(): void {
    this._host.endWrite(this);
  }

  override _indexError(_f: FieldLayout, i: number, length: number): Error {
    return invalidArgument(`array index ${i} is outside 0..${length - 1}`);
  }

  /** True if the view is positioned on a record. */
  get positioned(): boolean {
    return this._reclaims !== -1;
  }

  /** The key the view is positioned on. Throws VIEW_NOT_POSITIONED if none. */
  get key(): unknown {
    if (this._reclaims === -1) throw notPositioned();
    return this._key;
  }
}

const EMPTY_U8 = new Uint8Array(0);
const EMPTY_DV = new DataView(new ArrayBuffer(0));

function notPositioned(): OffHeapError {
  return new OffHeapError(OffHeapErrorCodes.VIEW_NOT_POSITIONED, 'struct view is not positioned on a record');
}

export function viewNotPositioned(key: unknown): OffHeapError {
  return new OffHeapError(
    OffHeapErrorCodes.VIEW_NOT_POSITIONED,
    `struct view's key ${String(key)} is no longer in the map (deleted or the map was cleared)`,
  );
}

/** The class `makeViewClass` makes, typed without its layout's fields. */
export type ViewClass = new (type: StructLayout<FieldSpec>, host: ViewHost) => StructViewBase<FieldSpec>;

/**
 * A view class with one accessor per field on its prototype (the skeleton's): a read is the reclaim check and one
 * DataView load. Classes are per struct type, so property access stays monomorphic.
 */
export function makeViewClass(layout: readonly FieldLayout[]): ViewClass {
  class View extends StructViewBase<FieldSpec> {}
  defineFieldAccessors(View.prototype, layout);
  return View;
}
