import { type ActorRef, makeRef, type SpawnOptions } from './actor-handle.js';
import { Mailbox } from './mailbox.js';
import { exposedNames, methodTable } from './method-table.js';

/**
 * Starts `instance` as an actor in this thread and returns its ref: every method of the instance (found on it and
 * its prototype chain) as a function returning a promise, run one message at a time in arrival order. The instance
 * must no longer be used directly. The caller owns the ref and must `stop()` it.
 *
 * Throws `ActorError` `HEAPLESS_ERR_ACTOR_NOT_A_METHOD` when an exposed name is not a method, and
 * `HEAPLESS_ERR_ACTOR_INVALID_OPTION` for a bad mailbox size or overflow policy.
 */
export function spawn<I extends object>(instance: I, opts: SpawnOptions = {}): ActorRef<I> {
  const table = methodTable(instance);
  const exposed = exposedNames(instance, table, opts.expose);
  return makeRef<I>(new Mailbox(instance, table, exposed, opts));
}
