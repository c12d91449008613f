const DETACHED = Symbol('heapless.detached');

/**
 * Marks `promise` as a reply that must not hold the mailbox: a method returning `detach(p)` lets the next message run
 * at once, and its caller is answered when `p` settles. For work the actor has already done whose completion is
 * waited on elsewhere, such as a write applied to the map and waiting for the WAL (many such waits share one group
 * commit). Returns the same promise.
 */
export function detach<T>(promise: Promise<T>): Promise<T> {
  (promise as { [DETACHED]?: true })[DETACHED] = true;
  return promise;
}

/** Whether `value` was marked by {@link detach}. */
export function isDetached(value: unknown): value is Promise<unknown> {
  return (value as { [DETACHED]?: true } | null)?.[DETACHED] === true;
}
