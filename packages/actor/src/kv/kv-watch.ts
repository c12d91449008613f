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
 * Resumes: the hub keeps the last BACKLOG_BYTES of the rounds it published (all keys, as pushed) and listens on
 * for LINGER_MS after the last watch ends, so that a watcher resuming after WATCH_OVERFLOW — often a hundred at
 * once — is answered from memory with views of those rounds, its live changes following the last one published;
 * only a resume from before the backlog reads the WALs.
 *
 * Bounds: a watch whose live changes wait beyond `maxWatchBytes` (a socket that does not drain, or a catch-up that
 * does not keep up) ends with WATCH_OVERFLOW after what it was sent, and the watcher resumes from the last
 * sequence it received; the history of one open is at most MAX_HISTORY_BYTES (a longer one ends the same way once
 * it is sent, and the resume goes on from there), pushed as the sink drains.
 */
import { type ErrorCode, HeaplessError, type KvChange, type KvWatchHead } from '@heapless/client/protocol';
import type { MapChanges } from '@heapless/offheap';
import { type PushSink, PushStream } from '../runtime/push-stream.js';
import { storageWireCode } from '../server/wire-error.js';
import { ChangeList } from './change-list.js';

/**
 * 1 MiB of live changes waiting per watch, as the reply bound of a connection (`maxReplyBytes`): 1,000 watchers
 * that stopped reading hold about 1 GiB; a watcher a second behind a writer of 1 MiB/s of changes is still served.
 */
export const DEFAULT_MAX_WATCH_BYTES = 1024 * 1024;
/** The most history one open reads into memory; the watcher resumes for the rest. */
const MAX_HISTORY_BYTES = 64 * 1024 * 1024;
/** Bytes of changes in one push message: a frame of a few hundred KiB keeps one socket write short. */
const PUSH_BYTES = 256 * 1024;
/**
 * Published changes kept for resumes: 16 watchers' worth of the default bound, about 100k changes of 100-byte values,
 * so that a watcher that overflowed (1 MiB behind) resumes from memory.
 */
export const BACKLOG_BYTES = 16 * 1024 * 1024;
/** How long the hub keeps listening (and its backlog) after the last watch ended: a resume comes within it. */
export const LINGER_MS = 5000;

/** Changes [at, to) of an unchanging list, still to push. */
interface Segment {
  readonly list: ChangeList;
  at: number;
  readonly to: number;
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
  readonly #hub: KvWatchHub;
  readonly #max: number;
  /** Live changes are those after it (the last sequence when the watch opened). */
  readonly #start: number;
  #sink: PushSink | null = null;
  /** History still to push, in order (the WAL's changes, or views of the hub's backlog); empty once pushed. */
  #history: Segment[] = [];
  /** The history was cut at MAX_HISTORY_BYTES: the watch ends once it is pushed. */
  #historyCut = false;
  /** The history is being read: live changes wait meanwhile. */
  #loading = false;
  /** Live changes waiting for the history or for the sink. */
  readonly #queue = new ChangeList();
  #ended = false;
  /** An end that came before the sink (an overflow while the history loaded): sent when it opens. */
  #pendingEnd: [ErrorCode, string] | null = null;

  constructor(hub: KvWatchHub, prefix: Uint8Array, start: number, max: number) {
    super();
    this.#hub = hub;
    this.prefix = prefix;
    this.#start = start;
    this.#max = max;
    this.head = { sequence: start };
  }

  /** Whether the watch is over (ended or cancelled). */
  get ended(): boolean {
    return this.#ended;
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

  /**
   * The history, prefix-filtered (the hub's): ranges of lists that do not change while pushed, and whether it was cut
   * short.
   */
  loaded(history: readonly Segment[], cut: boolean): void {
    this.#loading = false;
    if (this.#ended) return;
    this.#history = history.filter((h) => h.at < h.to);
    this.#historyCut = cut;
    this.#pump();
  }

  /**
   * Durable changes [from, to) of `list`, all under this watch's prefix (the hub filtered them): pushed at once when
   * nothing else waits, else queued; WATCH_OVERFLOW when more than the bound would wait.
   */
  offer(list: ChangeList, from: number, to: number): void {
    if (this.#ended) return;
    from = list.firstAfter(this.#start, from, to);
    if (from >= to) return;
    const sink = this.#sink;
    if (sink === null || this.#loading || this.#history.length > 0 || this.#queue.count > 0) {
      this.#queue.appendFrom(list, from, to);
      if (this.#queue.length > this.#max) this.#overflow();
      return;
    }
    if (sink.pendingBytes > this.#max) {
      this.#overflow();
      return;
    }
    pushRange(sink, list, from, to);
  }

  #overflow(): void {
    this.end(
      'WATCH_OVERFLOW',
      `the watcher fell more than ${this.#max} bytes of changes behind; watch again from the last sequence received`,
    );
  }

  /** Pushes what waits (history, then queued live changes) while the sink has room. */
  #pump(): void {
    const sink = this.#sink;
    if (sink === null || this.#loading) return;
    const room = this.#max / 2;
    while (!this.#ended && sink.pendingBytes < room) {
      const h = this.#history[0];
      if (h !== undefined) {
        h.at = pushRange(sink, h.list, h.at, h.to, PUSH_BYTES);
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
      // The queue's bytes move once pushed (dropFirst): push a copy.
      const next = pushRange(sink, q, 0, q.count, PUSH_BYTES, true);
      q.dropFirst(next);
    }
  }

  #release(): void {
    this.#history = [];
    this.#queue.reset();
    this.#hub.remove(this);
  }
}

/**
 * Pushes changes [from, to) of `list` in messages of about PUSH_BYTES (at least one change each), at most `limit`
 * bytes in all (at least one message); returns the index after the last change pushed. The sinks keep views of
 * `list`'s bytes until written: a list whose bytes change later is pushed as copies (`copy`).
 */
function pushRange(
  sink: PushSink,
  list: ChangeList,
  from: number,
  to: number,
  limit = Number.POSITIVE_INFINITY,
  copy = false,
): number {
  let pushed = 0;
  let i = from;
  while (i < to && pushed < limit) {
    const start = list.startOf(i);
    let j = i + 1;
    while (j < to && list.ends[j]! - start <= PUSH_BYTES) j++;
    const end = list.ends[j - 1]!;
    const bytes = list.bytes.subarray(start, end);
    sink.push(copy ? Buffer.from(bytes) : bytes, j - i);
    pushed += end - start;
    i = j;
  }
  return i;
}

/** The watches of one KV actor's map, and the one subscription to its change feed they share. */
export class KvWatchHub {
  readonly #map: WatchedMap;
  readonly #max: number;
  readonly #lingerMs: number;
  readonly #watches = new Set<KvWatch>();
  #unsubscribe: (() => void) | null = null;
  /** Changes committed and not yet given to the watches (every key: the backlog serves any prefix). */
  readonly #log = new ChangeList();
  /** The last rounds published, oldest first, never changed once made (watches push views of them). */
  #backlog: ChangeList[] = [];
  #backlogBytes = 0;
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

  /** `lingerMs`: how long the subscription and its backlog outlive the last watch (0: not at all). */
  constructor(map: WatchedMap, maxWatchBytes = DEFAULT_MAX_WATCH_BYTES, lingerMs = LINGER_MS) {
    this.#map = map;
    this.#max = maxWatchBytes;
    this.#lingerMs = lingerMs;
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
   * the store no longer has those changes or `from` is past its last sequence, SHUTTING_DOWN once closed.
   */
  async open(prefix: Uint8Array, from: number | undefined): Promise<KvWatch> {
    if (this.#closed) throw new HeaplessError('SHUTTING_DOWN', 'the store is closing');
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
    w.loaded([{ list: history, at: 0, to: history.count }], cut);
    return w;
  }

  /** The backlog's changes after `from` under `prefix`: views of its rounds, or one filtered copy. */
  #backlogAfter(from: number, prefix: Uint8Array): Segment[] {
    const out: Segment[] = [];
    const filtered = prefix.length > 0 ? new ChangeList() : null;
    for (const round of this.#backlog) {
      if (round.sequences[round.count - 1]! <= from) continue;
      const at = round.firstAfter(from, 0, round.count);
      if (filtered === null) out.push({ list: round, at, to: round.count });
      else
        for (let i = at; i < round.count; i++) if (round.keyStartsWith(i, prefix)) filtered.appendFrom(round, i, i + 1);
    }
    if (filtered !== null) out.push({ list: filtered, at: 0, to: filtered.count });
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
    this.#log.reset();
    this.#backlog = [];
    this.#backlogBytes = 0;
  }

  readonly #onChange = (sequence: number, key: Uint8Array, value: Uint8Array | undefined): void => {
    this.#log.append(sequence, key, value);
    if (!this.#waiting) {
      this.#waiting = true;
      // The write that told us is tracked by the map once the engine call returns: wait from a microtask, which
      // also lets every write of this turn share the wait.
      queueMicrotask(this.#wait);
    }
  };

  readonly #wait = (): void => {
    const generation = this.#generation;
    const upto = this.#log.count;
    this.#map.durable().then(
      () => this.#publish(generation, upto),
      (e: unknown) => this.#fail(generation, e),
    );
  };

  /** Changes [0, upto) of the log are durable: each watch gets those under its prefix. */
  #publish(generation: number, upto: number): void {
    if (generation !== this.#generation) {
      this.#waiting = false;
      if (this.#log.count > 0) {
        this.#waiting = true;
        this.#wait();
      }
      return;
    }
    // The round, copied out of the log (whose buffer is reused) and never changed after, and one list of it per
    // other prefix watched: every watch of a prefix pushes views of its list, which the sockets keep until written.
    const log = this.#log;
    const round = new ChangeList();
    round.appendFrom(log, 0, upto);
    const byPrefix = new Map<string, ChangeList>([['', round]]);
    for (const w of [...this.#watches]) {
      const id = Buffer.from(w.prefix).toString('latin1');
      let list = byPrefix.get(id);
      if (list === undefined) {
        list = new ChangeList();
        for (let i = 0; i < upto; i++) if (round.keyStartsWith(i, w.prefix)) list.appendFrom(round, i, i + 1);
        byPrefix.set(id, list);
      }
      w.offer(list, 0, list.count);
    }
    if (generation !== this.#generation) {
      // The last watch left while offered to (an overflow): the log went with the subscription, and so does this wait.
      this.#waiting = false;
      return;
    }
    this.#keep(round);
    log.dropFirst(upto);
    if (log.count > 0) this.#wait();
    else this.#waiting = false;
  }

  /** Adds a published round to the backlog, dropping the oldest rounds beyond BACKLOG_BYTES. */
  #keep(round: ChangeList): void {
    if (round.count === 0) return;
    this.#publishedThrough = round.sequences[round.count - 1]!;
    this.#backlog.push(round);
    this.#backlogBytes += round.length;
    while (this.#backlogBytes > BACKLOG_BYTES && this.#backlog.length > 1) {
      const old = this.#backlog.shift()!;
      this.#backlogBytes -= old.length;
      this.#coveredFrom = old.sequences[old.count - 1]!;
    }
  }

  /** The map could not make the writes durable: every watch ends with the storage code. */
  #fail(generation: number, e: unknown): void {
    this.#waiting = false;
    if (generation !== this.#generation) {
      if (this.#log.count > 0) {
        this.#waiting = true;
        this.#wait();
      }
      return;
    }
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
