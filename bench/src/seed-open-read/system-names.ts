/** The systems of `seed-open-read`, in table order (light: the parent reads it). */
export const OPEN_READ_SYSTEMS = [
  'lmdb',
  'classic-level',
  'rocksdb',
  'rocksdb-none',
  'heapless',
  'heapless-deflate',
  'heapless-none',
  'heapless-zstd',
  'heapless-read-only',
  'heapless-follower',
] as const;

export type OpenReadSystemName = (typeof OPEN_READ_SYSTEMS)[number];
