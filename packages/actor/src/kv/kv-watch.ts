/**
 * The KV actor's watch (FORMAT.md of @heapless/client, "KV watch"): changes of keys under a prefix pushed to the
 * watcher in commit order, each with its engine sequence, from a given sequence where the store still keeps it.
 *
 * The hub listens to the map's change feed (map.changes, only while a watch is open): each data write is encoded
 * once into its list as the engine commits it, and once the map says those writes are durable (`map.durable()`,
 * one wait per round of writes) the round goes to every watch, so that a watcher never sees a change a crash could
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
import { type ErrorCode, HeaplessError, type KvChange, type KvWatchHead } from '@heapless/client/protocol';
import type { MapChanges } from '@heapless/offheap';
import { type PushSink, PushStream } from '../runtime/push-stream.js';
import { storageWireCode } from '../server/wire-error.js';
import { ChangeList } from './change-list.js';
import { ChangePages, type Segment } from './change-pages.js';

/**
 * 1 MiB of memory held per watch, as the reply bound of a connection (`maxReplyBytes`): 1,000 watchers that stopped
 * reading hold about 1 GiB; a watcher half a second behind a writer of 1 MiB/s of changes is still served.
 */
export const DEFAULT_MAX_WATCH_BYTES = 1024 * 1024;
/** The most history one open reads into memory; the watcher resumes for the rest. */
const MAX_HISTORY_BYTES = 64 * 1024 * 1024;
/** Bytes of changes in one push message: a frame of a few hundred KiB keeps one socket write short. */
const PUSH_BYTES = 256 * 1024;
/**
 * Memory of the published changes kept for resumes (pages allocated): 16 watchers' worth of the default bound, about
 * 100k changes of 100-byte values, so that a watcher that overflowed (1 MiB behind) resumes from memory.
 */
export const BACKLOG_BYTES = 16 * 1024 * 1024;
/** Watches open at once per store: with the default bound, watchers that stop reading hold at most 1 GiB. */
export const DEFAULT_MAX_WATCHES = 1024;
/** How long the hub keeps listening (and its backlog) after the last watch ended: a resume comes within it. */
export const LINGER_MS = 5000;

/** Changes [at, to) of a list that does not change there, still to push; `filter`: only those under the prefix. */
interface HistorySegment extends Segment {
  readonly filter: boolean;
}

/** What the hub needs of the map. */
export interface WatchedMap {
  readonly changes: MapChanges;
  durable(): Promise<void>;
}

/** One open watch: a stream of {@link KvChange}s. */
export class KvWatch extends PushStream<KvChange> {
  readonly head: Omit<KvWatchHead, 'stream'>;
  readonly prefix: Uint8Array;
  /** The prefix as a string of its bytes (latin1): the hub groups watches of one prefix by it. */
  readonly prefixId: string;
  readonly #hub: KvWatchHub;
  readonly #max: number;
  /** It pushes while its sink holds less than this, and queues beyond. */
  readonly #room: number;
  /** Live changes are those after it (the last sequence when the watch opened). */
  readonly #start: number;
  #sink: PushSink | null = null;
  /** History still to push, in order (the WAL's changes, or views of the hub's backlog); empty once pushed. */
  #history: HistorySegment[] = [];
  /** The history was cut at MAX_HISTORY_BYTES: the watch ends once it is pushed. */
  #historyCut = false;
  /** The history is being read: live changes wait meanwhile. */
  #loading = false;
  /** Live changes waiting for the history or for the sink (copies: the pages they came from may be let go). */
  readonly #queue = new ChangeList();
  #ended = false;
  /** An end that came before the sink (an overflow while the history loaded): sent when it opens. */
  #pendingEnd: [ErrorCode, string] | null = null;

  constructor(hub: KvWatchHub, prefix: Uint8Array, start: number, max: number) {
    super();
    this.#hub = hub;
    this.prefix = prefix;
    this.prefixId = Buffer.from(prefix).toString('latin1');
    this.#start = start;
    this.#max = max;
    this.#room = max / 2;
    this.head = { sequence: start };
  }

  /** Whether the watch is over (ended or cancelled). */
  get ended(): boolean {
    return this.#ended;
  }

  /** Bytes of memory the watch holds: its sink's for what it pushed, and its queue's buffers. */
  get heldBytes(): number {
    return (this.#sink === null ? 0 : this.#sink.pendingBytes) + this.#queue.allocated;
  }

  open(sink: PushSink): void {
    this.#sink = sink;
    const e = this.#pendingEnd;
    if (e !== null) {
      this.#pendingEnd = null;
      sink.end(e[0], e[1]);
      return;
    }
    if (!this.#ended) this.#pump();
  }

  drained(): void {
    this.#pump();
  }

  cancel(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#release();
  }

  /** Ends the watch with `code` (sent once the sink is open; at once if it is). */
  end(code: ErrorCode, message: string): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#release();
    if (this.#sink !== null) this.#sink.end(code, message);
    else this.#pendingEnd = [code, message];
  }

  /** The open is reading the history (called by the hub before the read, so that live changes queue). */
  loading(): void {
    this.#loading = true;
  }

  /** The history: ranges of lists that do not change there, and whether it was cut short. */
  loaded(history: readonly HistorySegment[], cut: boolean): void {
    this.#loading = false;
    if (this.#ended) return;
    this.#history = history.filter((h) => h.at < h.to);
    this.#historyCut = cut;
    this.#pump();
  }

  /**
   * Durable changes [from, to) of `list`, all under this watch's prefix (the hub filtered them), in a list that does
   * not change there: pushed as views while the sink holds less than half the bound and nothing else waits, the rest
   * queued; WATCH_OVERFLOW once the watch would hold more than its bound.
   */
  offer(list: ChangeList, from: number, to: number): void {
    if (this.#ended) return;
    from = list.firstAfter(this.#start, from, to);
    if (from >= to) return;
    const sink = this.#sink;
    if (sink !== null && !this.#loading && this.#history.length === 0 && this.#queue.count === 0) {
      from = pushRange(sink, list, from, to, this.#room, false);
      if (from >= to) return;
    }
    this.#queue.appendFrom(list, from, to);
    if (this.heldBytes > this.#max) this.#overflow();
  }

  #overflow(): void {
    this.end(
      'WATCH_OVERFLOW',
      `the watcher fell behind by more than ${this.#max} bytes held for it; watch again from the last sequence received`,
    );
  }

  /** Pushes what waits (history, then queued live changes) while the sink holds less than half the bound. */
  #pump(): void {
    const sink = this.#sink;
    if (sink === null || this.#loading) return;
    while (!this.#ended && sink.pendingBytes < this.#room) {
      const h = this.#history[0];
      if (h !== undefined) {
        h.at = h.filter ? this.#pushFiltered(sink, h) : pushRange(sink, h.list, h.at, h.to, this.#room, false);
        if (h.at < h.to) continue;
        this.#history.shift();
        if (this.#history.length === 0 && this.#historyCut) {
          this.end(
            'WATCH_OVERFLOW',
            `more than ${MAX_HISTORY_BYTES} bytes of changes to catch up; watch again from the last sequence received`,
          );
        }
        continue;
      }
      const q = this.#queue;
      if (q.count === 0) return;
      // The queue's bytes move once pushed (dropFirst): push copies.
      q.dropFirst(pushRange(sink, q, 0, q.count, this.#room, true));
    }
  }

  /**
   * Pushes one message of the changes under the prefix from `h.at` (copied: the segment holds every key); returns
   * the index after the last change looked at.
   */
  #pushFiltered(sink: PushSink, h: HistorySegment): number {
    const part = new ChangeList();
    let i = h.at;
    for (; i < h.to && part.length < PUSH_BYTES; i++) {
      if (h.list.keyStartsWith(i, this.prefix)) part.appendFrom(h.list, i, i + 1);
    }
    if (part.count > 0) sink.push(part.bytes.subarray(0, part.length), part.count);
    return i;
  }

  #release(): void {
    this.#history = [];
    this.#queue.reset();
    this.#hub.remove(this);
  }
}

/**
 * Pushes changes [from, to) of `list` in messages of about PUSH_BYTES (at least one change each) while the sink holds
 * less than `room` (at least one message when it does at the start); returns the index after the last change pushed.
 * The sinks keep views of `list`'s bytes until written: a list whose bytes change later is pushed as copies (`copy`).
 */
function pushRange(sink: PushSink, list: ChangeList, from: number, to: number, room: number, copy: boolean): number {
  let i = from;
  while (i < to && sink.pendingBytes < room) {
    const start = list.startOf(i);
    let j = i + 1;
    while (j < to && list.ends[j]! - start <= PUSH_BYTES) j++;
    const bytes = list.bytes.subarray(start, list.ends[j - 1]!);
    sink.push(copy ? Buffer.from(bytes) : bytes, j - i);
    i = j;
  }
  return i;
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
      this.#unsubscribe = this.#map.changes.subscribe(this.#onChange);
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
      // The write that told us is tracked by the map once the engine call returns: wait from a microtask, which
      // also lets every write of this turn share the wait.
      queueMicrotask(this.#wait);
    }
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
  const code = storageWireCode(e) ?? 'STORAGE_IO';
  return new HeaplessError(code, (e as Error).message ?? String(e), { cause: e });
}
