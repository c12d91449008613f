import type { Options } from 'msgpackr';

/**
 * msgpackr options for every frame and body: plain msgpack maps rather than msgpackr's record extension, so that any
 * msgpack implementation can read the protocol. `bin` values decode to views of the received frame (no copy).
 */
export const MSGPACK_OPTIONS: Options = { useRecords: false, mapsAsObjects: true, moreTypes: false };
