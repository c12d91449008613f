/**
 * One open KV watch (kv-watch.ts has the hub that feeds it and the design): what it pushes to its sink, in order (its
 * history, then live changes), what it queues meanwhile, and when it ends with WATCH_OVERFLOW.
 */
import type { ErrorCode, KvChange, KvWatchHead } from '@heapless/client/protocol';
import { type PushSink, PushStream } from '../runtime/push-stream.js';
import { ChangeList } from './change-list.js';
import type { Segment } from './change-pages.js';

/** The most history one open reads into memory; the watcher resumes for the rest. */
export const MAX_HISTORY_BYTES = 64 * 1024 * 1024;
/** Bytes of changes in one push message: a frame of a few hundred KiB keeps one socket write short. */
const PUSH_BYTES = 256 * 1024;

/** Changes [at, to) of a list that does not change there, still to push; `filter`: only those under the prefix. */
export interface HistorySegment extends Segment {
  readonly filter: boolean;
}

/**
 * The owner of the open watches (kv-watch.ts's hub): a watch that is over tells it, and it lets the watch go. Named
 * here, by what a watch needs of it, so that the hub's file imports this one and not the other way round.
 */
export interface WatchOwner {
  remove(watch: KvWatch): void;
}

/** One open watch: a stream of {@link KvChange}s. */
export class KvWatch extends PushStream<KvChange> {
  readonly head: Omit<KvWatchHead, 'stream'>;
  readonly prefix: Uint8Array;
  /** The prefix as a string of its bytes (latin1): the hub groups watches of one prefix by it. */
  readonly prefixId: string;
  readonly #hub: WatchOwner;
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

  constructor(hub: WatchOwner, prefix: Uint8Array, start: number, max: number) {
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
