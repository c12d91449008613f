/**
 * Changes in pages written once: each page is a {@link ChangeList} whose buffer never moves or changes behind its
 * end, so that sinks may keep views of the changes in it (until their sockets write them) while later changes are
 * appended after those. The watch hub keeps its backlog this way (every key), and one set of pages per other prefix
 * watched, so that a round of changes costs a copy into the current page, not a new list with its own buffer.
 *
 * What a set of pages costs is what its pages allocated (`allocated`: buffers and per-change arrays, used or not),
 * and that is what bounds it; a page let go stays alive as long as some sink holds a view of it, and those sinks
 * count it in their own bound (held-memory.ts).
 */
import { CHANGE_OVERHEAD, ChangeList } from './change-list.js';

/**
 * A page's buffer: about a thousand small changes, so that a round is rarely split, and small enough that a watcher
 * that keeps up holds little more than one (a change larger than this gets a page of its own size).
 */
export const PAGE_BYTES = 64 * 1024;
/** A page's first per-change arrays (they double as it fills; only the buffer must never move). */
const PAGE_CHANGES = 512;

/** Changes [at, to) of a list that does not change where they are. */
export interface Segment {
  readonly list: ChangeList;
  at: number;
  to: number;
}

export class ChangePages {
  /** Oldest first; the last one is appended to. */
  readonly pages: ChangeList[] = [];
  /** Bytes allocated by the pages before the last (they no longer change). */
  #sealed = 0;

  /** Bytes the pages have allocated. */
  get allocated(): number {
    const last = this.pages[this.pages.length - 1];
    return this.#sealed + (last === undefined ? 0 : last.allocated);
  }

  /**
   * Appends one change (`value` undefined for a delete) after the last page's, and adds it to `out`: to its last
   * segment when it follows that one in the same page.
   */
  appendChange(sequence: number, key: Uint8Array, value: Uint8Array | undefined, out: Segment[]): void {
    const page = this.#pageFor(CHANGE_OVERHEAD + key.length + (value === undefined ? 0 : value.length));
    const at = page.count;
    page.append(sequence, key, value);
    extend(out, page, at);
  }

  /**
   * Copies the changes [from, to) of `src` whose key starts with `prefix` (every one for an empty prefix) after the
   * last page's, and adds the segments holding them to `out` (a run in one page is one segment).
   */
  append(src: ChangeList, from: number, to: number, prefix: Uint8Array, out: Segment[]): void {
    const all = prefix.length === 0;
    let i = from;
    while (i < to) {
      if (!all && !src.keyStartsWith(i, prefix)) {
        i++;
        continue;
      }
      const start = src.startOf(i);
      const page = this.#pageFor(src.ends[i]! - start);
      let j = i + 1;
      while (j < to && src.ends[j]! - start <= page.free && (all || src.keyStartsWith(j, prefix))) j++;
      const at = page.count;
      page.appendFrom(src, i, j);
      extend(out, page, at);
      i = j;
    }
  }

  /**
   * Lets go of the oldest pages while more than `limit` bytes are allocated, never the last one nor `keep` and those
   * after it; returns the sequence of the last change let go (-1 if none was).
   */
  trim(limit: number, keep?: ChangeList): number {
    let dropped = -1;
    while (this.pages.length > 1 && this.pages[0] !== keep && this.allocated > limit) {
      const old = this.pages.shift()!;
      this.#sealed -= old.allocated;
      if (old.count > 0) dropped = old.lastSequence;
    }
    return dropped;
  }

  /** Lets go of every page. */
  clear(): void {
    this.pages.length = 0;
    this.#sealed = 0;
  }

  /** The last page when `bytes` more fit in it, else a new one (of at least `bytes`). */
  #pageFor(bytes: number): ChangeList {
    const last = this.pages[this.pages.length - 1];
    if (last !== undefined && last.free >= bytes) return last;
    if (last !== undefined) this.#sealed += last.allocated;
    const page = new ChangeList(Math.max(PAGE_BYTES, bytes), PAGE_CHANGES);
    this.pages.push(page);
    return page;
  }
}

/** Adds changes [at, count) of `page` to `out`: to its last segment when that ends at `at` in the same page. */
function extend(out: Segment[], page: ChangeList, at: number): void {
  const last = out[out.length - 1];
  if (last !== undefined && last.list === page && last.to === at) last.to = page.count;
  else out.push({ list: page, at, to: page.count });
}
