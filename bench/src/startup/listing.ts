/**
 * The records of seed 004: product listings, as a search service keeps them in memory and reloads them at every
 * start. Deterministic, so every system stores exactly the same records.
 */
import { Xorshift32 } from '../harness/xorshift32.js';

/** One listing: about 120 bytes as msgpack with record structures. */
export interface Listing {
  id: number;
  title: string;
  price: number;
  sellerId: number;
  tags: [string, string, string];
  updatedAt: number;
}

const TAGS = ['new', 'used', 'refurbished', 'sale', 'bundle', 'import', 'local', 'premium', 'eco', 'kids'] as const;
const NOUNS = ['lamp', 'chair', 'phone', 'kettle', 'jacket', 'bicycle', 'camera', 'desk', 'guitar', 'watch'] as const;
/** 2026-01-01T00:00:00Z: listings were updated during the year before the benchmark's clock. */
const EPOCH_MS = 1_767_225_600_000;

/** The key of listing `i`: `listing:<i>`. */
export function listingKey(i: number): string {
  return `listing:${i}`;
}

/** Listing `i`, the same on every call and in every process. */
export function listingOf(i: number): Listing {
  const random = new Xorshift32(i + 1);
  const noun = NOUNS[random.below(NOUNS.length)]!;
  return {
    id: i,
    title: `${noun} #${i} in very good condition`,
    price: random.below(1_000_000) / 100,
    sellerId: random.below(200_000),
    tags: [TAGS[random.below(TAGS.length)]!, TAGS[random.below(TAGS.length)]!, TAGS[random.below(TAGS.length)]!],
    updatedAt: EPOCH_MS - random.below(365 * 24 * 3600) * 1000,
  };
}

/** Throws unless `value` is listing `i` (the first get of every probe checks what it read). */
export function checkListing(i: number, value: unknown): void {
  const expected = listingOf(i);
  const got = value as Partial<Listing> | undefined;
  if (got?.title !== expected.title || got.price !== expected.price || got.tags?.[2] !== expected.tags[2]) {
    throw new Error(`${listingKey(i)} read ${JSON.stringify(value)}, expected ${JSON.stringify(expected)}`);
  }
}
