/** A map's reports of itself (OffHeapMap's `stats()` and `openStats`), read from its parts. */
import type { FieldSpec } from '@heapless/struct';
import type { MapParts } from './map-open.js';
import type { MapOpenStats, OffHeapMapStats } from './map-options.js';

/** Memory accounting of the map made of `parts`; see OffHeapMapStats. */
export function mapStats<F extends FieldSpec>(parts: MapParts<F>): OffHeapMapStats {
  const { arena: a, index, origin } = parts;
  const t = index.table;
  return {
    entries: index.count,
    indexBytes: index.bytes,
    indexCapacity: t.capacity,
    loadFactor: (t.live + t.tombstones) / t.capacity,
    tombstones: index.tombstones,
    growing: index.old !== null,
    arenaBytes: a.reservedBytes,
    arenaUsedBytes: a.usedBytes,
    liveBytes: a.liveBytes,
    payloadBytes: parts.store.payload,
    expiring: parts.store.expiring,
    expiryIndexBytes: parts.store.expiries.bytes,
    garbageBytes: a.freeBytes + a.wasteBytes,
    segments: a.buffers.length,
    loadedFrom: origin.loadedFrom,
    imageLoader: origin.imageLoader,
    imageRejected: origin.imageRejected,
  };
}

/** How the open of `parts` filled the map: from its image (and the WAL writes replayed onto it), or a scan. */
export function openStats<F extends FieldSpec>(parts: MapParts<F>): MapOpenStats {
  const { origin: o, pending: s, imagePages } = parts;
  return {
    source: o.loadedFrom,
    replayed: o.replayed,
    replayPending: s === null ? 0 : s.remaining,
    replayPages: s === null ? 0 : s.pages,
    imagePagesCopied: imagePages === null ? 0 : imagePages.pages,
    imageCheck: o.imageCheck,
    imageRejected: o.imageRejected,
  };
}
