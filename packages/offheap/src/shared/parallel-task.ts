import type { SharedMapHandle } from './shared-handle.js';

/**
 * Messages from a map to its piscina workers (parallel-worker.ts). Each task carries its own share() handle, so a
 * worker attaches, works, and detaches within the task; the table to scan is named by buffer, as it was when the
 * scan started.
 */
export type ParallelTask =
  | {
      readonly op: 'scan' | 'filter';
      readonly handle: SharedMapHandle;
      readonly table: SharedArrayBuffer;
      readonly capacity: number;
      readonly from: number;
      readonly to: number;
      readonly module: string;
      readonly name: string;
      readonly arg: unknown;
    }
  | {
      readonly op: 'getMany';
      readonly handle: SharedMapHandle;
      readonly keys: readonly unknown[];
    };

/** What a worker sends back: the task's value, or its error as data (code and message survive cloning). */
export type ParallelResult =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly code: string | null; readonly message: string; readonly stack: string };

/** Names a function exported by a module that a worker thread can import (a file path or URL). */
export interface WorkerFunction {
  /** The module: an absolute path, or a `file:`/`data:` URL (e.g. `new URL('./scan-age.js', import.meta.url)`). */
  readonly module: string | URL;
  /** The export to call (default: `default`). */
  readonly name?: string;
  /** A structured-cloneable argument passed to every call. */
  readonly arg?: unknown;
}
