/**
 * What a follower stores beside its records, as the map's named metadata (FORMAT.md, "Follower metadata"): the
 * stream position it has applied, the schema id and stream of its values, and the checkpoint its data came from.
 * Each value is UTF-8 text (a position in decimal), so that any tool reading the engine can tell what it is. The
 * position, schema and stream are written in the same `map.batch()` as the records they describe, so that after a
 * crash they never disagree with the records.
 */
import type { MapBatch, OffHeapMap } from '@heapless/offheap';
import { ReplicaError } from '../errors.js';

/** The last stream sequence applied (decimal). */
export const META_POSITION = 'heapless.replica.position';
/** The schema id of the values. */
export const META_SCHEMA = 'heapless.replica.schema';
/** The change stream the position belongs to. */
export const META_STREAM = 'heapless.replica.stream';
/** The id of the checkpoint the data was loaded from (absent for data replayed from the stream's start). */
export const META_CHECKPOINT = 'heapless.replica.checkpoint';

/** A follower's stored state; undefined fields were never written. */
export interface FollowerState {
  readonly position: number | undefined;
  readonly schema: string | undefined;
  readonly stream: string | undefined;
  readonly checkpoint: string | undefined;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** The bytes of a metadata text value. */
export function metaText(value: string): Uint8Array {
  return encoder.encode(value);
}

/** The bytes of a position. */
export function metaPosition(position: number): Uint8Array {
  return encoder.encode(String(position));
}

/** Reads the follower's metadata from `map`. Throws INVALID_ARGUMENT for a value that is not what this file writes. */
export function readFollowerState(map: OffHeapMap<string, unknown>): FollowerState {
  const text = (name: string) => {
    const bytes = map.meta.get(name);
    if (bytes === undefined) return undefined;
    try {
      return decoder.decode(bytes);
    } catch {
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
        `metadata ${name} is not UTF-8: not a follower's data`,
      );
    }
  };
  const position = text(META_POSITION);
  if (position !== undefined && !/^(0|[1-9][0-9]{0,15})$/.test(position))
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `metadata ${META_POSITION} is '${position}', not a stream position`,
    );
  return {
    position: position === undefined ? undefined : Number(position),
    schema: text(META_SCHEMA),
    stream: text(META_STREAM),
    checkpoint: text(META_CHECKPOINT),
  };
}

/** Adds the position, schema and stream to `batch` (the batch that holds the records they cover). */
export function addFollowerMeta(
  batch: MapBatch<string, unknown>,
  position: number,
  schema: string,
  stream: string,
): void {
  batch.setMeta(META_POSITION, metaPosition(position));
  batch.setMeta(META_SCHEMA, metaText(schema));
  batch.setMeta(META_STREAM, metaText(stream));
}
