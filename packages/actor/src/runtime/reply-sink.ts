/**
 * Where the outcome of a call goes. The server's per-connection session is one sink for all its calls (the call's
 * `id` tells them apart), so a remote call costs no promise and no closure; local callers use {@link Deferred}.
 */
export interface ReplySink {
  resolve(id: number, value: unknown): void;
  reject(id: number, error: unknown): void;
  /**
   * Told that the call's method has returned a promise not yet settled (an async method, or a `detach`ed one): it
   * has run, its outcome comes later. A sink that feeds calls one at a time (the server's session) posts its next
   * call then rather than waiting for the outcome. A worker actor tells it when the call is handed to its thread.
   */
  ran?(id: number): void;
}

/** A sink for one call that settles a promise. */
export class Deferred implements ReplySink {
  readonly promise: Promise<unknown>;
  #resolve!: (v: unknown) => void;
  #reject!: (e: unknown) => void;

  constructor() {
    this.promise = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  resolve(_id: number, value: unknown): void {
    this.#resolve(value);
  }

  reject(_id: number, error: unknown): void {
    this.#reject(error);
  }
}
