/**
 * One write of one key: what a KV `batch` carries on the wire (FORMAT.md, "KV batches and metadata"), what a KV
 * actor hands to its write sink on a following server, and what a change message of the replica's change log
 * holds (the replica's FORMAT.md, "Payload"). The three are one idea, so they are one type: a value read from the
 * log is written to the map, and a write checked by the actor goes to the log, with no conversion on the way.
 *
 * A union tagged by `type`, each member an object of named fields, so that a later property of a write (an expiry,
 * a condition) is an optional field of the members it applies to. Storage keeps its own internal form (the engine's
 * `WriteOperation`).
 */

/** Set `key` to `value`: the value's encoded bytes, stored and served as they are. */
export interface SetOp {
  readonly type: 'set';
  readonly key: string;
  readonly value: Uint8Array;
}

/** Delete `key`. */
export interface DeleteOp {
  readonly type: 'delete';
  readonly key: string;
  /** Never present: declared so that `op.value` reads, as undefined, without narrowing. */
  readonly value?: undefined;
}

/** One write of one key: a set or a delete. */
export type WriteOp = SetOp | DeleteOp;

/** A set of `key` to `value`'s bytes (not copied). */
export function setOp(key: string, value: Uint8Array): SetOp {
  return { type: 'set', key, value };
}

/** A delete of `key`; an object of two fields, so that it travels as `{ type, key }` on the wire. */
export function deleteOp(key: string): DeleteOp {
  return { type: 'delete', key };
}
