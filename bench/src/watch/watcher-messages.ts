/** What the `watch` workload and its watcher process tell each other over IPC. */

/** Parent → watchers. */
export type ToWatchers = { type: 'open'; url: string; count: number } | { type: 'report' } | { type: 'close' };

/** Watchers → parent. */
export type FromWatchers =
  | { type: 'opened' }
  | {
      type: 'report';
      /** Changes received by every watcher together since it opened. */
      received: number;
      /** The lowest last sequence received among the watchers (-1 before each got one). */
      minSequence: number;
      /** WATCH_OVERFLOW ends met (each resumed from its last sequence). */
      overflows: number;
    }
  | { type: 'closed' }
  | { type: 'failed'; message: string };
