/**
 * A retry pause that a close can cut short: `sleep(ms)` resolves after `ms`, or at once when `wake()` is called
 * (the reader's and the follower's back-off between failed attempts, which must not hold up their close).
 */
export class WakeablePause {
  private wakeNow: (() => void) | undefined;

  /** Resolves after `ms`, or when {@link wake} is called, whichever is first; its timer is cleared either way. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.wakeNow === done) this.wakeNow = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeNow = done;
    });
  }

  /** Ends the pause in progress, if any. */
  wake(): void {
    this.wakeNow?.();
  }
}
