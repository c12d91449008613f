/**
 * The link between an actor method that streams and the client ref that calls it: the server's stream object (a
 * KV watch) is a `Streamed<T>`, and a ref gives a `RemoteStream<T>` for a method whose result is one.
 */

/** The brand of a stream object (set to true on it). */
export const STREAM: unique symbol = Symbol.for('heapless.stream');
/** Carries a stream's item type, for the types only (never set). */
export const STREAM_ITEM: unique symbol = Symbol.for('heapless.streamItem');

/** What an actor method returns (a promise of) to push items of type `T` to its caller after the reply. */
export interface Streamed<T> {
  readonly [STREAM]: true;
  readonly [STREAM_ITEM]?: T;
}
