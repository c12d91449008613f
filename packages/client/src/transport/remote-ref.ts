import { isMethodName } from '../protocol/method-names.js';
import type { RemoteStream } from './remote-stream.js';

/** What a ref needs from the thing that carries its calls (a WebSocket or an HTTP client). */
export interface CallTarget {
  call(method: string, args: unknown[]): Promise<unknown>;
  close(): Promise<void>;
  /** Where the calls go (for logs): the WebSocket URL or the HTTP base URL. */
  readonly url: string;
  /** The methods the server said it exposes (its hello), or null when it did not say (HTTP, an older server). */
  readonly methods: ReadonlySet<string> | null;
  /** The methods whose call opens a stream (the hello's `streams`), or null: none known (HTTP). */
  readonly streams?: ReadonlySet<string> | null;
  /** Opens a stream by calling `method` (one of `streams`). */
  stream?<T>(method: string, args: unknown[]): RemoteStream<T>;
}

const INSPECT = Symbol.for('nodejs.util.inspect.custom');

/**
 * The object behind a ref's Proxy: what a ref is when it is logged, printed or serialised. Node's `util.inspect`
 * looks at a Proxy's target, not through its traps, so these live here; they close over the call target rather
 * than use `this`, which is the Proxy when they are called through it.
 */
class RefTarget {
  readonly toString: () => string;
  readonly toJSON: () => { heaplessRef: string; methods: string[] | null };
  readonly [INSPECT]: () => string;
  constructor(target: CallTarget) {
    const list = () => (target.methods === null ? null : [...target.methods]);
    this.toString = () => `[HeaplessRef ${target.url}]`;
    this.toJSON = () => ({ heaplessRef: target.url, methods: list() });
    this[INSPECT] = () => {
      const m = list();
      return `HeaplessRef <${target.url}>${m === null ? '' : ` { ${m.join(', ')} }`}`;
    };
  }
  get [Symbol.toStringTag](): string {
    return 'HeaplessRef';
  }
}

/**
 * A Proxy whose remote methods are functions calling the method of that name on `target`: the names of the server's
 * method list when it sent one, else any name that can be an actor method (see method-names.ts). Every other
 * property is undefined, so a ref is not a thenable and probes (`$$typeof`, `nodeType`, `asymmetricMatch`...) find
 * nothing. Its own members: `close()`, and `toJSON`, `toString`, `Symbol.toStringTag` and `util.inspect.custom`,
 * which describe it (`JSON.stringify({ kv })` gives `{"kv":{"heaplessRef":"ws://...","methods":[...]}}`). The method
 * functions are made once per name and cached.
 */
export function remoteRef<R>(target: CallTarget): R {
  const methods = new Map<string, (...args: unknown[]) => Promise<unknown>>();
  const close = () => target.close();
  const isRemote = (name: string): boolean =>
    isMethodName(name) && (target.methods === null || target.methods.has(name));
  const self = new RefTarget(target);
  return new Proxy(self, {
    get(t, prop) {
      if (typeof prop !== 'string') return Reflect.get(t, prop);
      if (prop === 'close') return close;
      if (prop === 'toJSON' || prop === 'toString') return t[prop];
      if (!isRemote(prop)) return undefined;
      let f = methods.get(prop);
      if (f === undefined) {
        f =
          target.streams?.has(prop) && target.stream !== undefined
            ? (...args: unknown[]) => target.stream!(prop, args) as unknown as Promise<unknown>
            : (...args: unknown[]) => target.call(prop, args);
        methods.set(prop, f);
      }
      return f;
    },
    has(t, prop) {
      if (typeof prop !== 'string') return Reflect.has(t, prop);
      return prop === 'close' || prop === 'toJSON' || prop === 'toString' || isRemote(prop);
    },
  }) as R;
}
