import type { MethodNames, Promisified } from '@heapless/client/protocol';
import type { ReplySink } from './reply-sink.js';

/** How `stop()` treats calls still queued: run them (`drain: true`, the default) or reject them with `ACTOR_STOPPED`. */
export interface StopOptions {
  drain?: boolean;
}

/** Receives every finished call: the method, seconds from arrival to completion, and whether it succeeded. */
export interface CallObserver {
  observe(method: string, seconds: number, ok: boolean): void;
}

/** What a mailbox does with a call that arrives when it is full: make the caller wait, or reject `MAILBOX_FULL`. */
export type Overflow = 'wait' | 'reject';

/** Options of `spawn` and `spawnInWorker`. */
export interface SpawnOptions {
  /** Calls the mailbox holds (queued, running included); default 1024. */
  mailbox?: number;
  /** Default `'wait'`. */
  overflow?: Overflow;
  /** Overrides the class's static `exposed` list (needed for plain objects, which have none). */
  expose?: readonly string[];
  /** Told about every finished call (metrics). */
  observer?: CallObserver;
}

/**
 * The untyped side of a ref, used by `publish` and by tests: post a call by name, see what is exposed, stop.
 * A local actor and a worker actor have the same handle.
 */
export interface ActorHandle {
  /** The names remote callers may call. */
  readonly exposed: ReadonlySet<string>;
  /** Every method name a local caller may call. */
  readonly methods: ReadonlySet<string>;
  /** Calls waiting or running (the mailbox's load). */
  readonly load: number;
  /**
   * Posts one call; its outcome goes to `sink` with `id`. Never throws: `UNKNOWN_METHOD`, `MAILBOX_FULL` and
   * `ACTOR_STOPPED` go to the sink too.
   */
  post(method: string, args: unknown[], sink: ReplySink, id: number): void;
  /**
   * Runs the calls posted so far now, in this turn, if the actor is idle; otherwise they run when it is free, as
   * they would without this. For a caller at the top of an event-loop turn (a socket's data handler) that posted
   * a frame's calls and wants their replies before it returns, rather than a microtask later. A worker actor
   * ignores it (its calls run in another thread).
   */
  runQueued(): void;
  /** Posts one call and returns its outcome as a promise. */
  call(method: string, args: unknown[]): Promise<unknown>;
  /** Stops the actor (see {@link StopOptions}); resolves after `onStop()`. Idempotent. */
  stop(opts?: StopOptions): Promise<void>;
}

/** Names a ref keeps for itself. */
type RefReserved = 'stop' | 'onStop';

/**
 * A typed ref to an actor whose instance type is `I`: each of its methods returning a promise of its result, and
 * `stop()`. The creator of the ref must stop it.
 */
export type ActorRef<I> = Promisified<I, Exclude<MethodNames<I>, RefReserved>> & {
  /** Stops the actor: no new calls; queued ones drained or rejected; then `onStop()`. */
  stop(opts?: StopOptions): Promise<void>;
};

const HANDLE = Symbol('heapless.actorHandle');

/** The handle behind a ref made by `spawn` or `spawnInWorker`. Throws a TypeError for anything else. */
export function handleOf(ref: object): ActorHandle {
  const h = (ref as { [HANDLE]?: ActorHandle })[HANDLE];
  if (h === undefined) throw new TypeError('not an actor ref (make one with spawn or spawnInWorker)');
  return h;
}

/** Builds the ref object for `handle`: one function per method, made once. */
export function makeRef<I>(handle: ActorHandle): ActorRef<I> {
  const ref: Record<string | symbol, unknown> = Object.create(null);
  for (const name of handle.methods) {
    ref[name] = (...args: unknown[]) => handle.call(name, args);
  }
  ref.stop = (opts?: StopOptions) => handle.stop(opts);
  Object.defineProperty(ref, HANDLE, { value: handle });
  return ref as ActorRef<I>;
}
