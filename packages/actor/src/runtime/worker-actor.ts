import { Worker } from 'node:worker_threads';
import { HeaplessError, type InstanceOf } from '@heapless/client/protocol';
import { ActorError } from '../errors.js';
import {
  type ActorHandle,
  type ActorRef,
  type CallObserver,
  makeRef,
  type Overflow,
  type SpawnOptions,
  type StopOptions,
} from './actor-handle.js';
import { Deferred, type ReplySink } from './reply-sink.js';
import { RingQueue } from './ring-queue.js';
import { deserializeError, type FromWorker, type ToWorker } from './worker-messages.js';

class Call {
  constructor(
    readonly method: string,
    readonly args: unknown[],
    readonly sink: ReplySink,
    readonly sinkId: number,
    readonly t0: number,
  ) {}
}

/**
 * The parent side of a worker actor. It bounds the mailbox here (calls sent to the worker and not yet answered, plus
 * the ones waiting), batches the calls of one tick into one postMessage, and fails every call with `ACTOR_STOPPED`
 * if the worker dies.
 */
class WorkerHandle implements ActorHandle {
  readonly exposed: ReadonlySet<string>;
  readonly methods: ReadonlySet<string>;
  readonly #worker: Worker;
  readonly #capacity: number;
  readonly #overflow: Overflow;
  readonly #observer: CallObserver | undefined;
  readonly #inWorker = new Map<number, Call>();
  readonly #waiting = new RingQueue<Call>();
  #outbox: [number, string, unknown[]][] = [];
  #nextId = 1;
  #stopping = false;
  #stopDrain = true;
  #stopSent = false;
  #stopped: Promise<void> | null = null;
  #exited = false;
  #exitError: Error | null = null;
  #onExit: (() => void) | null = null;

  constructor(worker: Worker, ready: { methods: string[]; exposed: string[] }, opts: SpawnOptions) {
    this.#worker = worker;
    this.methods = new Set(ready.methods);
    this.exposed = new Set(ready.exposed);
    this.#capacity = opts.mailbox ?? 1024;
    this.#overflow = opts.overflow ?? 'wait';
    this.#observer = opts.observer;
    worker.on('message', (m: FromWorker) => this.#onMessage(m));
    worker.on('error', (e) => {
      this.#exitError = e;
    });
    worker.on('exit', (code) => this.#onWorkerExit(code));
  }

  get load(): number {
    return this.#inWorker.size + this.#waiting.length;
  }

  post(method: string, args: unknown[], sink: ReplySink, id: number): void {
    if (this.#stopping || this.#exited) {
      sink.reject(id, new HeaplessError('ACTOR_STOPPED', `actor is stopped, ${method} was not run`));
      return;
    }
    if (!this.methods.has(method)) {
      sink.reject(id, new HeaplessError('UNKNOWN_METHOD', `unknown method ${method}`));
      return;
    }
    const call = new Call(method, args, sink, id, this.#observer === undefined ? 0 : performance.now());
    if (this.#inWorker.size < this.#capacity && this.#waiting.length === 0) this.#send(call);
    else if (this.#overflow === 'wait') this.#waiting.push(call);
    else sink.reject(id, new HeaplessError('MAILBOX_FULL', `mailbox full (${this.#capacity}), ${method} was not run`));
  }

  /** Calls run in the worker's thread; the calls of a tick already go to it in one message. */
  runQueued(): void {}

  call(method: string, args: unknown[]): Promise<unknown> {
    const d = new Deferred();
    this.post(method, args, d, 0);
    return d.promise;
  }

  stop(opts: StopOptions = {}): Promise<void> {
    if (this.#stopped !== null) return this.#stopped;
    this.#stopping = true;
    this.#stopDrain = opts.drain !== false;
    this.#stopped = new Promise<void>((resolve) => {
      this.#onExit = resolve;
    }).then(() => {
      if (this.#exitError !== null) throw this.#exitError;
    });
    if (this.#exited) this.#onExit?.();
    else {
      if (!this.#stopDrain) {
        const err = new HeaplessError('ACTOR_STOPPED', 'actor stopped before this call ran');
        for (let c = this.#waiting.shift(); c !== undefined; c = this.#waiting.shift()) this.#settle(c, false, err);
      }
      this.#maybeSendStop();
    }
    return this.#stopped;
  }

  #send(call: Call): void {
    const id = this.#nextId++;
    this.#inWorker.set(id, call);
    if (this.#outbox.length === 0) queueMicrotask(this.#flush);
    this.#outbox.push([id, call.method, call.args]);
    call.sink.ran?.(call.sinkId);
  }

  #flush = (): void => {
    const c = this.#outbox;
    this.#outbox = [];
    if (c.length === 0 || this.#exited) return;
    try {
      this.#post({ t: 'calls', c });
    } catch {
      // Arguments that cannot be cloned: send each call alone so only the guilty one fails.
      for (const one of c) {
        try {
          this.#post({ t: 'calls', c: [one] });
        } catch (e) {
          const call = this.#inWorker.get(one[0]);
          this.#inWorker.delete(one[0]);
          if (call !== undefined) {
            this.#settle(call, false, new HeaplessError('BAD_ARGUMENTS', `arguments cannot be sent: ${String(e)}`));
          }
        }
      }
    }
  };

  #post(m: ToWorker): void {
    this.#worker.postMessage(m);
  }

  #maybeSendStop(): void {
    if (!this.#stopping || this.#stopSent || this.#exited || this.#waiting.length > 0) return;
    this.#stopSent = true;
    this.#flush();
    this.#post({ t: 'stop', drain: this.#stopDrain });
  }

  #onMessage(m: FromWorker): void {
    if (m.t === 'replies') {
      for (const [id, ok, v] of m.r) {
        const call = this.#inWorker.get(id);
        if (call === undefined) continue;
        this.#inWorker.delete(id);
        this.#settle(call, ok === 1, ok === 1 ? v : deserializeError(v as never));
      }
      while (this.#waiting.length > 0 && this.#inWorker.size < this.#capacity) this.#send(this.#waiting.shift()!);
      this.#maybeSendStop();
    } else if (m.t === 'stopped') {
      if (m.e !== undefined) this.#exitError = deserializeError(m.e);
      void this.#worker.terminate();
    }
  }

  #onWorkerExit(code: number): void {
    this.#exited = true;
    const err = new HeaplessError('ACTOR_STOPPED', `worker actor exited (code ${code})`);
    for (const [id, call] of this.#inWorker) {
      this.#inWorker.delete(id);
      this.#settle(call, false, err);
    }
    for (let c = this.#waiting.shift(); c !== undefined; c = this.#waiting.shift()) this.#settle(c, false, err);
    this.#onExit?.();
    this.#onExit = null;
  }

  #settle(call: Call, ok: boolean, value: unknown): void {
    if (this.#observer !== undefined) this.#observer.observe(call.method, (performance.now() - call.t0) / 1000, ok);
    if (ok) call.sink.resolve(call.sinkId, value);
    else call.sink.reject(call.sinkId, value);
  }
}

/**
 * Starts an actor in its own worker thread: the worker imports `moduleUrl`, constructs `new (exportName)(...args)`
 * and runs it in a mailbox; the returned ref has the same type and behaviour as one from `spawn` (arguments and
 * results cross by structured clone, so `Buffer`s arrive as `Uint8Array`s). `T` is the actor's class
 * (`typeof MyActor`). Rejects with `ActorError` `HEAPLESS_ERR_ACTOR_WORKER_START` when the module, export or constructor
 * fails. The caller owns the ref and must `stop()` it, which ends the worker.
 */
export async function spawnInWorker<T>(
  moduleUrl: string | URL,
  exportName: string,
  args: unknown[] = [],
  opts: SpawnOptions = {},
): Promise<ActorRef<InstanceOf<T>>> {
  const capacity = opts.mailbox ?? 1024;
  if (!Number.isInteger(capacity) || capacity < 1) {
    throw new ActorError('HEAPLESS_ERR_ACTOR_INVALID_OPTION', `mailbox must be an integer >= 1, got ${capacity}`);
  }
  const worker = new Worker(new URL('./worker-entry.js', import.meta.url), {
    workerData: { moduleUrl: String(moduleUrl), exportName, args, expose: opts.expose },
  });
  const ready = await new Promise<{ methods: string[]; exposed: string[] }>((resolve, reject) => {
    const fail = (e: unknown) => {
      worker.off('message', onMessage);
      void worker.terminate();
      reject(
        new ActorError(
          'HEAPLESS_ERR_ACTOR_WORKER_START',
          `worker actor ${exportName} from ${moduleUrl}: ${String(e)}`,
          {
            cause: e,
          },
        ),
      );
    };
    const onMessage = (m: FromWorker) => {
      if (m.t === 'ready') {
        worker.off('message', onMessage);
        worker.off('error', fail);
        worker.off('exit', fail);
        resolve(m);
      } else if (m.t === 'failed') fail(deserializeError(m.e).message);
    };
    worker.on('message', onMessage);
    worker.once('error', fail);
    worker.once('exit', fail);
  });
  return makeRef<InstanceOf<T>>(new WorkerHandle(worker, ready, opts));
}
