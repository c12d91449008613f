import type { ReservedName } from '../protocol/method-names.js';
import type { Streamed } from '../protocol/streamed.js';
import type { RemoteStream } from './remote-stream.js';

// biome-ignore lint/suspicious/noExplicitAny: function types must accept any parameters to match every method.
type AnyFn = (...args: any[]) => any;

/** The instance type behind `T`: the instance of a class `T`, or `T` itself (an interface or object type). */
// biome-ignore lint/suspicious/noExplicitAny: matches every constructor signature.
export type InstanceOf<T> = T extends abstract new (...args: any) => infer I ? I : T;

/** The method names of `I` (functions only), minus the names a ref keeps for itself (method-names.ts). */
export type MethodNames<I> = {
  [K in keyof I]: K extends string ? (K extends ReservedName ? never : I[K] extends AnyFn ? K : never) : never;
}[keyof I];

/**
 * The names callable remotely on `T`: when `T` is a class with a static `exposed` list (the actor convention),
 * those names; otherwise every method of `T`.
 */
export type ExposedNames<T> = T extends { readonly exposed: readonly (infer K)[] }
  ? Extract<K, MethodNames<InstanceOf<T>>>
  : MethodNames<InstanceOf<T>>;

/**
 * `I`'s methods named by `K`, each returning a promise of its (awaited) result, or, for a method whose result is a
 * `Streamed<T>` (a KV watch), a {@link RemoteStream} of `T` at once.
 */
export type Promisified<I, K extends keyof I> = {
  [P in K]: I[P] extends (...args: infer A) => infer R
    ? Awaited<R> extends Streamed<infer T>
      ? (...args: A) => RemoteStream<T>
      : (...args: A) => Promise<Awaited<R>>
    : never;
};

/**
 * What a client ref offers for `T` (an actor class, written `typeof MyActor`, or an interface): every exposed method
 * with its parameter types, returning a promise of its result, and `close()`.
 */
export type Remote<T> = Promisified<InstanceOf<T>, ExposedNames<T>> & {
  /** Closes the connection; calls still in flight reject with `CLIENT_CLOSED`. Resolves when the socket is closed. */
  close(): Promise<void>;
};
