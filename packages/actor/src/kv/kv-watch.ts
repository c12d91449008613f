/**
 * The KV actor's watch (FORMAT.md of @heapless/client, "KV watch"): changes of keys under a prefix pushed to the
 * watcher in commit order, each with its engine sequence, from a given sequence where the store still keeps it.
 *
 * The hub follows the map's change feed (map.changes, only while a watch is open): each data write is encoded once
 * into its list as the hub reads it, in the turn the engine committed it, and once the map says those writes are
 * durable (`map.durable()`, one wait per round of writes) the round goes to every watch, so that a watcher never sees a change a crash could
 * take back (after which the same sequence would name another write). A watch opened from sequence F reads the
 * changes in (F, S] from the retained WALs (`changes.since`), where S is the last sequence when it opened, pushes
 * them, then the live ones after S it queued meanwhile, then live ones as they come.
 *
 * Memory: a round is copied once into the backlog's pages (change-pages.ts: buffers written once, never moved), and
 * once more into the pages of each other prefix watched unless all of its changes are under that prefix; every watch
 * of a prefix pushes views of the same pages, which its sink holds until its socket wrote them. The backlog is bounded
 * by what its pages allocate (BACKLOG_BYTES), a prefix's pages by one page once pushed, and a watch by what it holds
 * (`maxWatchBytes`): its sink's held memory (every buffer behind a view it keeps, once, and a cost per message in
 * flight: held-memory.ts) and its own queue's buffers. A watcher that keeps up costs one page and the messages in
 * flight, whatever the number of writes.
 *
 * Resumes: the hub keeps the last BACKLOG_BYTES of published changes (all keys, as pushed) and listens on for
 * LINGER_MS after the last watch ends, so that a watcher resuming after WATCH_OVERFLOW — often a hundred at once —
 * is answered from memory with views of those pages (its prefix applied as they are pushed), its live changes
 * following the last one published; only a resume from before the backlog reads the WALs. Pages the backlog let go
 * while a resume still pushes them stay alive for it: at most the backlog of the moment it opened.
 *
 * Bounds: a watch that would hold more than `maxWatchBytes` (a socket that does not drain, or a catch-up that does
 * not keep up) ends with WATCH_OVERFLOW after what it was sent, and the watcher resumes from the last sequence it
 * received; it pushes while it holds less than half of that, and queues (copies) beyond. The history of one open is
 * at most MAX_HISTORY_BYTES (a longer one ends the same way once it is sent, and the resume goes on from there),
 * pushed as the sink drains.
 */
import { HeaplessError } from '@heapless/client/protocol';
import type { MapChanges } from '@heapless/offheap';
import { packageWireCode } from '../server/wire-error.js';
import { ChangeList } from './change-list.js';
import { ChangePages, type Segment } from './change-pages.js';
import { type HistorySegment, KvWatch, MAX_HISTORY_BYTES } from './kv-watch-stream.js';

export { KvWatch } from './kv-watch-stream.js';

/**
 * 1 MiB of memory held per watch, as the reply bound of a connection (`maxReplyBytes`): 1,000 watchers that stopped
 * reading hold about 1 GiB; a watcher half a second behind a writer of 1 MiB/s of changes is still served.
 */
export const DEFAULT_MAX_WATCH_BYTES = 1024 * 1024;
/**
 * Memory of the published changes kept for resumes (pages allocated): 16 watchers' worth of the default bound, about
 * 100k changes of 100-byte values, so that a watcher that overflowed (1 MiB behind) resumes from memory.
 */
export const BACKLOG_BYTES = 16 * 1024 * 1024;
/** Watches open at once per store: with the default bound, watchers that stop reading hold at most 1 GiB. */
export const DEFAULT_MAX_WATCHES = 1024;
/** How long the hub keeps listening (and its backlog) after the last watch ended: a resume comes within it. */
export const LINGER_MS = 5000;

/** What the hub needs of the map. */
export interface WatchedMap {
  readonly changes: MapChanges;
  durable(): Promise<void>;
}

/** The watches of one KV actor's map, and the one subscription to its change feed they share. */
export class KvWatchHub {
  readonly #map: WatchedMap;
  readonly #max: number;
  readonly #lingerMs: number;
  readonly #maxWatches: number;
  readonly #watches = new Set<KvWatch>();
  #unsubscribe: (() => void) | null = null;
  /**
   * Every change committed while subscribed, every key, in pages that watches push views of: the last BACKLOG_BYTES
   * of those published (the backlog), then those not yet durable.
   */
  readonly #backlog = new ChangePages();
  /** The changes committed and not yet given to the watches: segments of the backlog's last pages. */
  #pending: Segment[] = [];
  /** Per other prefix watched (by `prefixId`), the pages of its changes; the last page only is kept. */
  readonly #feeds = new Map<string, ChangePages>();
  /** A round's segments per prefix, made anew each round (reused). */
  readonly #rounds = new Map<string, Segment[]>();
  /** Every change after this sequence is in the backlog or the log (while subscribed). */
  #coveredFrom = 0;
  /** The sequence of the last change published (or `#coveredFrom`): the log's changes all follow it. */
  #publishedThrough = 0;
  /** Stops the subscription LINGER_MS after the last watch ended; null while watches are open. */
  #linger: NodeJS.Timeout | null = null;
  /** A durability wait is running. */
  #waiting = false;
  /** Bumped when the subscription ends: a wait of an older one publishes nothing. */
  #generation = 0;
  #closed = false;

  /**
   * `lingerMs`: how long the subscription and its backlog outlive the last watch (0: not at all); `maxWatches`: how
   * many may be open at once.
   */
  constructor(
    map: WatchedMap,
    maxWatchBytes = DEFAULT_MAX_WATCH_BYTES,
    lingerMs = LINGER_MS,
    maxWatches = DEFAULT_MAX_WATCHES,
  ) {
    this.#map = map;
    this.#max = maxWatchBytes;
    this.#lingerMs = lingerMs;
    this.#maxWatches = maxWatches;
  }

  /** Watches open now. */
  get size(): number {
    return this.#watches.size;
  }

  /** Whether the hub listens to the map's change feed now (only while a watch is open). */
  get subscribed(): boolean {
    return this.#unsubscribe !== null;
  }

  /**
   * Opens a watch of the keys starting with `prefix` (UTF-8 bytes): live from the map's last sequence now, after
   * the changes in (`from`, now] read from the retained WALs when `from` is given. Rejects with SEQUENCE_GONE when
   * the store no longer has those changes or `from` is past its last sequence, TOO_MANY_STREAMS when `maxWatches`
   * are open, SHUTTING_DOWN once closed.
   */
  async open(prefix: Uint8Array, from: number | undefined): Promise<KvWatch> {
    if (this.#closed) throw new HeaplessError('SHUTTING_DOWN', 'the store is closing');
    if (this.#watches.size >= this.#maxWatches) {
      throw new HeaplessError('TOO_MANY_STREAMS', `the store has its maximum of ${this.#maxWatches} watches open`);
    }
    const changes = this.#map.changes;
    const start = changes.lastSequence;
    if (from !== undefined && from > start) {
      throw new HeaplessError('SEQUENCE_GONE', `sequence ${from} is past the store's last one, ${start}`);
    }
    if (from !== undefined && this.#unsubscribe !== null && from >= this.#coveredFrom) {
      // From the backlog: its rounds up to the last published change, then live ones after it.
      const through = Math.max(from, this.#publishedThrough);
      const w = new KvWatch(this, prefix, through, this.#max);
      this.#add(w);
      w.loaded(this.#backlogAfter(from, prefix), false);
      return w;
    }
    const w = new KvWatch(this, prefix, start, this.#max);
    this.#add(w);
    if (from === undefined || from === start) return w;
    w.loading();
    const history = new ChangeList();
    let cut = false;
    let answer: Awaited<ReturnType<MapChanges['since']>>;
    try {
      answer = await changes.since(from, (seq, key, value) => {
        if (cut || !startsWith(key, prefix)) return;
        if (history.length >= MAX_HISTORY_BYTES) cut = true;
        else history.append(seq, key, value);
      });
    } catch (e) {
      w.cancel();
      throw storageError(e);
    }
    if (!answer.ok) {
      w.cancel();
      throw new HeaplessError(
        'SEQUENCE_GONE',
        `the changes after sequence ${from} are no longer kept (${answer.reason}); read the current state and watch from its sequence`,
      );
    }
    w.loaded([{ list: history, at: 0, to: history.count, filter: false }], cut);
    return w;
  }

  /**
   * The backlog's published changes after `from`: views of its pages, filtered by `prefix` as they are pushed (the
   * pages' later changes are not durable yet: the watch gets them live).
   */
  #backlogAfter(from: number, prefix: Uint8Array): HistorySegment[] {
    const out: HistorySegment[] = [];
    const filter = prefix.length > 0;
    const through = this.#publishedThrough;
    for (const page of this.#backlog.pages) {
      if (page.count === 0 || page.lastSequence <= from) continue;
      if (page.sequences[0]! > through) break;
      const at = page.firstAfter(from, 0, page.count);
      out.push({ list: page, at, to: page.firstAfter(through, at, page.count), filter });
    }
    return out;
  }

  /** Ends every watch with SHUTTING_DOWN and stops listening; later opens are refused. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#cancelLinger();
    for (const w of [...this.#watches]) w.end('SHUTTING_DOWN', 'the store is closing');
    this.#stop();
  }

  /** A watch ended or was cancelled (called by it). */
  remove(w: KvWatch): void {
    if (!this.#watches.delete(w)) return;
    if (this.#watches.size > 0 || this.#unsubscribe === null) return;
    if (this.#closed || this.#lingerMs === 0) this.#stop();
    else {
      this.#linger = setTimeout(this.#stop.bind(this), this.#lingerMs);
      this.#linger.unref();
    }
  }

  #add(w: KvWatch): void {
    this.#cancelLinger();
    this.#watches.add(w);
    if (this.#unsubscribe === null) {
      this.#coveredFrom = this.#publishedThrough = this.#map.changes.lastSequence;
      this.#unsubscribe = this.#map.changes.subscribe(this.#onChange, this.#lost);
    }
  }

  #cancelLinger(): void {
    if (this.#linger !== null) clearTimeout(this.#linger);
    this.#linger = null;
  }

  #stop(): void {
    this.#linger = null;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#generation++;
    this.#pending = [];
    this.#backlog.clear();
    this.#feeds.clear();
    this.#rounds.clear();
  }

  readonly #onChange = (sequence: number, key: Uint8Array, value: Uint8Array | undefined): void => {
    this.#backlog.appendChange(sequence, key, value, this.#pending);
    if (!this.#waiting) {
      this.#waiting = true;
      // Wait from a microtask: every change the feed hands over now shares the wait.
      queueMicrotask(this.#wait);
    }
  };

  /**
   * The feed lost changes (more were written in one turn than the engine keeps for its followers, and its WALs no
   * longer had them): every watch ends as one that fell behind, and its watcher resumes from the last sequence it
   * received (answered from the WALs, or SEQUENCE_GONE).
   */
  readonly #lost = (reason: string): void => {
    const watches = [...this.#watches];
    this.#stop();
    for (const w of watches)
      w.end('WATCH_OVERFLOW', `the store's change feed fell behind (${reason}); resume the watch`);
  };

  /** Waits until the changes pending now are durable, then publishes them (later ones wait for the next round). */
  readonly #wait = (): void => {
    const generation = this.#generation;
    const round = this.#pending;
    this.#pending = [];
    this.#map.durable().then(
      () => this.#publish(generation, round),
      (e: unknown) => this.#fail(generation, e),
    );
  };

  /** A subscription that ended took its round's wait with it: changes of the next one that came meanwhile wait now. */
  #waitAgain(): void {
    this.#waiting = this.#pending.length > 0;
    if (this.#waiting) this.#wait();
  }

  /** The changes of `round` (segments of the backlog's pages) are durable: each watch gets those under its prefix. */
  #publish(generation: number, round: Segment[]): void {
    if (generation !== this.#generation) {
      this.#waitAgain();
      return;
    }
    // Every watch of a prefix pushes views of the same pages: the backlog's, or that prefix's copy when only some of
    // the round is under it.
    const rounds = this.#rounds;
    rounds.set('', round);
    for (const w of this.#watches) {
      let segments = rounds.get(w.prefixId);
      if (segments === undefined) {
        segments = this.#prefixRound(w.prefixId, w.prefix, round);
        rounds.set(w.prefixId, segments);
      }
      for (const seg of segments) w.offer(seg.list, seg.at, seg.to);
    }
    if (generation !== this.#generation) {
      // The last watch left while offered to (an overflow): the pages went with the subscription, and so does this
      // wait.
      this.#waitAgain();
      return;
    }
    for (const id of this.#feeds.keys()) if (!rounds.has(id)) this.#feeds.delete(id);
    rounds.clear();
    const last = round[round.length - 1]!;
    this.#publishedThrough = last.list.sequences[last.to - 1]!;
    // Pages of changes not yet published stay whatever the bound.
    const dropped = this.#backlog.trim(BACKLOG_BYTES, this.#pending[0]?.list ?? last.list);
    if (dropped >= 0) this.#coveredFrom = dropped;
    this.#waitAgain();
  }

  /** The segments of `round` under `prefix`: the round's own when every change is, else a copy in its pages. */
  #prefixRound(id: string, prefix: Uint8Array, round: Segment[]): Segment[] {
    let every = true;
    for (const seg of round) for (let i = seg.at; i < seg.to && every; i++) every = seg.list.keyStartsWith(i, prefix);
    if (every) return round;
    let feed = this.#feeds.get(id);
    if (feed === undefined) {
      feed = new ChangePages();
      this.#feeds.set(id, feed);
    }
    const out: Segment[] = [];
    for (const seg of round) feed.append(seg.list, seg.at, seg.to, prefix, out);
    feed.trim(0);
    return out;
  }

  /** The map could not make the writes durable: every watch ends with the storage code. */
  #fail(generation: number, e: unknown): void {
    if (generation !== this.#generation) {
      this.#waitAgain();
      return;
    }
    this.#waiting = false;
    const err = storageError(e);
    for (const w of [...this.#watches]) w.end(err.code, err.message);
  }
}

function startsWith(key: Uint8Array, prefix: Uint8Array): boolean {
  const n = prefix.length;
  if (key.length < n) return false;
  for (let i = 0; i < n; i++) if (key[i] !== prefix[i]) return false;
  return true;
}

/** A storage failure as the HeaplessError a watcher is given. */
function storageError(e: unknown): HeaplessError {
  if (e instanceof HeaplessError) return e;
  const code = packageWireCode(e) ?? 'STORAGE_IO';
  return new HeaplessError(code, (e as Error).message ?? String(e), { cause: e });
}
