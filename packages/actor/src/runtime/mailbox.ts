import { HeaplessError } from '@heapless/client/protocol';
import { ActorError } from '../errors.js';
import type { ActorHandle, CallObserver, Overflow, StopOptions } from './actor-handle.js';
import { isDetached } from './detach.js';
import type { Method } from './method-table.js';
import { Deferred, type ReplySink } from './reply-sink.js';
import { RingQueue } from './ring-queue.js';

/** One message; one fixed shape. */
class Envelope {
  constructor(
    readonly name: string,
    readonly fn: Method,
    readonly args: unknown[],
    readonly sink: ReplySink,
    readonly id: number,
    readonly t0: number,
  ) {}
}

/**
 * Messages run one after another in a turn, up to this many before yielding to I/O with setImmediate, so that one busy
 * actor cannot starve the sockets that feed it.
 */
const MESSAGES_PER_TURN = 1024;

type State = 'running' | 'stopping' | 'stopped';

/**
 * The mailbox of a local actor: calls are queued in arrival order and run one at a time; an async method holds the
 * mailbox until its promise settles. At most `capacity` calls are queued or running; beyond that a call either waits
 * in arrival order (`'wait'`, the caller's promise stays pending) or is rejected with `MAILBOX_FULL` (`'reject'`).
 * An error thrown by a method rejects that call only.
 */
export class Mailbox implements ActorHandle {
  readonly exposed: ReadonlySet<string>;
  readonly methods: ReadonlySet<string>;
  readonly #target: object;
  readonly #table: ReadonlyMap<string, Method>;
  readonly #capacity: number;
  readonly #overflow: Overflow;
  readonly #observer: CallObserver | undefined;
  readonly #queue = new RingQueue<Envelope>();
  readonly #waiting = new RingQueue<Envelope>();
  #running = false;
  #scheduled = false;
  /** Detached replies not yet settled (see detach.ts). */
  #detached = 0;
  #state: State = 'running';
  #stopped: Promise<void> | null = null;
  #finishStop: (() => void) | null = null;

  constructor(
    target: object,
    table: ReadonlyMap<string, Method>,
    exposed: ReadonlySet<string>,
    opts: { mailbox?: number; overflow?: Overflow; observer?: CallObserver } = {},
  ) {
    const capacity = opts.mailbox ?? 1024;
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new ActorError('HEAPLESS_ERR_ACTOR_INVALID_OPTION', `mailbox must be an integer >= 1, got ${capacity}`);
    }
    if (opts.overflow !== undefined && opts.overflow !== 'wait' && opts.overflow !== 'reject') {
      throw new ActorError('HEAPLESS_ERR_ACTOR_INVALID_OPTION', `overflow must be 'wait' or 'reject'`);
    }
    this.#target = target;
    this.#table = table;
    this.methods = new Set(table.keys());
    this.exposed = exposed;
    this.#capacity = capacity;
    this.#overflow = opts.overflow ?? 'wait';
    this.#observer = opts.observer;
  }

  get load(): number {
    return this.#queue.length + (this.#running ? 1 : 0) + this.#waiting.length;
  }

  post(method: string, args: unknown[], sink: ReplySink, id: number): void {
    if (this.#state !== 'running') {
      sink.reject(id, new HeaplessError('ACTOR_STOPPED', `actor is stopped, ${method} was not run`));
      return;
    }
    const fn = this.#table.get(method);
    if (fn === undefined) {
      sink.reject(id, new HeaplessError('UNKNOWN_METHOD', `unknown method ${method}`));
      return;
    }
    const env = new Envelope(method, fn, args, sink, id, this.#observer === undefined ? 0 : performance.now());
    if (this.#queue.length + (this.#running ? 1 : 0) < this.#capacity && this.#waiting.length === 0) {
      this.#queue.push(env);
      this.#schedule();
    } else if (this.#overflow === 'wait') {
      this.#waiting.push(env);
    } else {
      sink.reject(id, new HeaplessError('MAILBOX_FULL', `mailbox full (${this.#capacity}), ${method} was not run`));
    }
  }

  call(method: string, args: unknown[]): Promise<unknown> {
    const d = new Deferred();
    this.post(method, args, d, 0);
    return d.promise;
  }

  stop(opts: StopOptions = {}): Promise<void> {
    if (this.#stopped !== null) return this.#stopped;
    this.#state = 'stopping';
    this.#stopped = new Promise<void>((resolve) => {
      this.#finishStop = resolve;
    }).then(() => this.#runOnStop());
    if (opts.drain === false) {
      const err = new HeaplessError('ACTOR_STOPPED', 'actor stopped before this call ran');
      for (let e = this.#queue.shift(); e !== undefined; e = this.#queue.shift()) this.#settle(e, false, err);
      for (let e = this.#waiting.shift(); e !== undefined; e = this.#waiting.shift()) this.#settle(e, false, err);
    }
    this.#maybeStopped();
    return this.#stopped;
  }

  async #runOnStop(): Promise<void> {
    this.#state = 'stopped';
    const onStop = (this.#target as { onStop?: () => unknown }).onStop;
    if (typeof onStop === 'function') await onStop.call(this.#target);
  }

  #maybeStopped(): void {
    if (
      this.#state === 'stopping' &&
      !this.#running &&
      this.#detached === 0 &&
      this.#queue.length === 0 &&
      this.#waiting.length === 0
    ) {
      this.#finishStop?.();
      this.#finishStop = null;
    }
  }

  runQueued(): void {
    if (this.#running || this.#queue.length === 0) return;
    // A microtask or setImmediate already scheduled finds #scheduled false and does nothing.
    this.#scheduled = false;
    this.#run();
  }

  #schedule(): void {
    if (this.#scheduled || this.#running) return;
    this.#scheduled = true;
    queueMicrotask(this.#kick);
  }

  /** The scheduled entry into {@link #run}: a no-op when {@link runQueued} got there first. */
  #kick = (): void => {
    if (!this.#scheduled) return;
    this.#scheduled = false;
    this.#run();
  };

  /** Runs queued messages until the queue is empty, an async method holds the mailbox, or the turn's budget is spent. */
  #run(): void {
    this.#running = true;
    const target = this.#target;
    for (let n = 0; n < MESSAGES_PER_TURN; n++) {
      let env = this.#queue.shift();
      if (env === undefined) {
        // A mailbox whose every slot was the call that just finished (`mailbox: 1` under an async method): the
        // oldest waiting call takes that slot. Without this it would wait forever, and so would stop().
        env = this.#waiting.shift();
        if (env === undefined) break;
      } else {
        const w = this.#waiting.shift();
        if (w !== undefined) this.#queue.push(w);
      }
      let r: unknown;
      try {
        r = env.fn.apply(target, env.args);
      } catch (e) {
        this.#settle(env, false, e);
        continue;
      }
      if (isDetached(r)) {
        // Answered when it settles; the mailbox moves on now. stop() still waits for it.
        this.#detached++;
        r.then(
          (v) => this.#settleDetached(env, true, v),
          (e) => this.#settleDetached(env, false, e),
        );
        env.sink.ran?.(env.id);
        continue;
      }
      if (r !== null && typeof r === 'object' && typeof (r as PromiseLike<unknown>).then === 'function') {
        // The mailbox stays held until the method's promise settles.
        (r as PromiseLike<unknown>).then(
          (v) => {
            this.#settle(env, true, v);
            this.#run();
          },
          (e) => {
            this.#settle(env, false, e);
            this.#run();
          },
        );
        env.sink.ran?.(env.id);
        return;
      }
      this.#settle(env, true, r);
    }
    this.#running = false;
    if (this.#queue.length > 0 || this.#waiting.length > 0) {
      this.#scheduled = true;
      setImmediate(this.#kick);
      return;
    }
    this.#maybeStopped();
  }

  #settleDetached(env: Envelope, ok: boolean, value: unknown): void {
    this.#detached--;
    this.#settle(env, ok, value);
    if (!this.#running) this.#maybeStopped();
  }

  #settle(env: Envelope, ok: boolean, value: unknown): void {
    if (this.#observer !== undefined) this.#observer.observe(env.name, (performance.now() - env.t0) / 1000, ok);
    if (ok) env.sink.resolve(env.id, value);
    else env.sink.reject(env.id, value);
  }
}
