/**
 * Optional base class of an actor. An actor is any object whose methods are called through a ref, one message at a
 * time; extending `Actor` only adds the conventions:
 *
 * - `static readonly exposed = ['get', 'set'] as const` names the methods a published actor offers remotely (only
 *   those; a method not listed is an unknown method to remote callers). The typed client reads the same list.
 * - `onStop()` runs once after the mailbox is drained or rejected by `stop()`; close what the actor owns there.
 */
export abstract class Actor {
  /** The methods callable remotely. Subclasses override it with their own `as const` list. */
  static readonly exposed: readonly string[] = [];

  /** Called once when the actor stops, after its last message; its own failure rejects `stop()`. */
  onStop(): void | Promise<void> {}
}
