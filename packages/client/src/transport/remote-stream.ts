import { HeaplessError } from '../protocol/heapless-error.js';

/** Options of a stream call (a KV `watch`) on the client side. */
export interface StreamOptions {
  /**
   * Items received and not yet taken by the consumer that the client keeps; one more and the stream is cancelled
   * and ends with `WATCH_OVERFLOW` once the consumer has taken those kept (no item is dropped before the end).
   * Default 10,000.
   */
  maxBufferedItems?: number;
}

const DEFAULT_MAX_BUFFERED_ITEMS = 10_000;

/** What a stream needs of the connection that carries it. */
export interface StreamHost {
  /** Asks the server to stop stream `id` (its items still on the way are dropped). */
  cancel(id: number): void;
}

function noop(): void {}

/**
 * The client side of a stream (FORMAT.md, "Streams"): an async iterator of the items the server pushes after its
 * reply, in order. `next()` rejects with the stream's end (a `HeaplessError`: `WATCH_OVERFLOW`, `SHUTTING_DOWN`,
 * `CONNECTION_LOST`, `CLIENT_CLOSED`...) once every item before it has been taken; a refused call (`SEQUENCE_GONE`,
 * `BAD_ARGUMENTS`) rejects the first `next()`. `return()` (leaving a `for await` loop) cancels it on the server.
 * Items are kept until taken, at most `maxBufferedItems` of them.
 */
export class RemoteStream<T> implements AsyncIterableIterator<T> {
  readonly #host: StreamHost;
  readonly #max: number;
  #items: T[] = [];
  #head = 0;
  /** A `next()` waiting for an item. */
  #waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | null = null;
  /** A `nextBatch()` waiting for items (never both waiters at once). */
  #batchWaiter: { max: number; resolve: (items: T[]) => void; reject: (e: unknown) => void } | null = null;
  /** How the stream ended (given after the items kept), or null while it runs. */
  #end: HeaplessError | null = null;
  /** The consumer left (`return()`): nothing more is given. */
  #returned = false;
  #id = 0;
  #resolveOpened: (head: unknown) => void = noop;
  #rejectOpened: (e: unknown) => void = noop;
  /** Resolves with the reply's value (for a KV watch, `{ stream, sequence }`) once the server opened the stream. */
  readonly opened: Promise<unknown>;

  constructor(host: StreamHost, opts: StreamOptions = {}) {
    this.#host = host;
    this.#max = opts.maxBufferedItems ?? DEFAULT_MAX_BUFFERED_ITEMS;
    this.opened = new Promise((resolve, reject) => {
      this.#resolveOpened = resolve;
      this.#rejectOpened = reject;
    });
    this.opened.catch(noop); // the same error reaches next()
  }

  /** The server's id of the stream, 0 before its reply. */
  get id(): number {
    return this.#id;
  }

  /** The reply came (by the connection): `head` is its value, whose `stream` is the id of the pushes to come. */
  opening(head: unknown): number {
    const id = (head as { stream?: unknown } | null)?.stream;
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 1) {
      this.ended(new HeaplessError('BAD_FRAME', 'a stream reply without a stream id'));
      return 0;
    }
    this.#id = id;
    this.#resolveOpened(head);
    return id;
  }

  /** Items arrived (by the connection). */
  pushed(items: unknown[]): void {
    if (this.#end !== null || this.#returned) return;
    if (items.length === 0) return;
    const w = this.#waiter;
    const b = this.#batchWaiter;
    let i = 0;
    if (w !== null) {
      this.#waiter = null;
      w.resolve({ value: items[0] as T, done: false });
      i = 1;
    } else if (b !== null) {
      this.#batchWaiter = null;
      // Nothing is kept while a batch waits: these are the batch, the array itself when it all fits.
      i = Math.min(items.length, b.max);
      b.resolve(i === items.length ? (items as T[]) : (items.slice(0, i) as T[]));
    }
    for (; i < items.length; i++) this.#items.push(items[i] as T);
    if (this.#items.length - this.#head > this.#max) {
      this.#host.cancel(this.#id);
      this.ended(
        new HeaplessError(
          'WATCH_OVERFLOW',
          `more than ${this.#max} items received and not taken; every item before this error was delivered`,
        ),
      );
    }
  }

  /** The stream is over (by the connection, or refused): `error` comes after the items kept. */
  ended(error: HeaplessError): void {
    if (this.#end !== null) return;
    this.#end = error;
    this.#rejectOpened(error);
    if (this.#head !== this.#items.length) return;
    const w = this.#waiter;
    if (w !== null) {
      this.#waiter = null;
      if (this.#returned) w.resolve({ value: undefined, done: true });
      else w.reject(error);
    }
    const b = this.#batchWaiter;
    if (b !== null) {
      this.#batchWaiter = null;
      if (this.#returned) b.resolve([]);
      else b.reject(error);
    }
  }

  /** Whether the stream is over for the connection (ended, or left by its consumer). */
  get finished(): boolean {
    return this.#end !== null || this.#returned;
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#returned) return Promise.resolve({ value: undefined, done: true });
    if (this.#head < this.#items.length) {
      const value = this.#items[this.#head]!;
      this.#items[this.#head++] = undefined as T;
      this.#taken();
      return Promise.resolve({ value, done: false });
    }
    if (this.#end !== null) return Promise.reject(this.#end);
    if (this.#waiter !== null || this.#batchWaiter !== null) return Promise.reject(this.#busy('next()'));
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  /**
   * The items kept, at most `max` of them (default: all), in order, taken at once: waits for at least one. Rejects
   * as `next()` does once every item before the end was taken; after `return()`, resolves `[]`. For a consumer of
   * many items per second: one promise per arrival of items rather than one per item.
   */
  nextBatch(max = Number.POSITIVE_INFINITY): Promise<T[]> {
    if (!(max >= 1)) return Promise.reject(new RangeError(`nextBatch(max): max must be at least 1, got ${max}`));
    if (this.#returned) return Promise.resolve([]);
    const kept = this.#items.length - this.#head;
    if (kept > 0) {
      let batch: T[];
      if (kept <= max) {
        batch = this.#head === 0 ? this.#items : this.#items.slice(this.#head);
        this.#items = [];
        this.#head = 0;
      } else {
        batch = this.#items.slice(this.#head, this.#head + max);
        this.#head += max;
        this.#taken();
      }
      return Promise.resolve(batch);
    }
    if (this.#end !== null) return Promise.reject(this.#end);
    if (this.#waiter !== null || this.#batchWaiter !== null) return Promise.reject(this.#busy('nextBatch()'));
    return new Promise((resolve, reject) => {
      this.#batchWaiter = { max, resolve, reject };
    });
  }

  /**
   * The stream as an async iterator of batches ({@link nextBatch}): `for await (const changes of w.batches())`. It
   * ends (done) after `return()`, and throws the stream's end as the item iterator does; leaving the loop cancels
   * the stream.
   */
  batches(max?: number): AsyncIterableIterator<T[]> {
    const stream = this;
    return {
      async next(): Promise<IteratorResult<T[]>> {
        const batch = await stream.nextBatch(max);
        return batch.length === 0 ? { value: undefined, done: true } : { value: batch, done: false };
      },
      async return(): Promise<IteratorResult<T[]>> {
        await stream.return();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  /** Items up to `#head` were taken: drops them once all are, or once they are most of a long array. */
  #taken(): void {
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
  }

  #busy(call: string): TypeError {
    return new TypeError(`${call} called before the previous next() or nextBatch() settled`);
  }

  /** Leaves the stream: cancels it on the server and drops what is kept. */
  return(): Promise<IteratorResult<T>> {
    if (!this.#returned) {
      this.#returned = true;
      this.#items = [];
      this.#head = 0;
      if (this.#end === null && this.#id !== 0) this.#host.cancel(this.#id);
      const w = this.#waiter;
      this.#waiter = null;
      w?.resolve({ value: undefined, done: true });
      const b = this.#batchWaiter;
      this.#batchWaiter = null;
      b?.resolve([]);
    }
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
