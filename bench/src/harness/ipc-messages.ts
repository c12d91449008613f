/**
 * Messages between the parent (orchestrator) and a child (runner) over the IPC channel of `child_process.fork`.
 * One child runs one system for one run: the parent sends a {@link JobMessage}, the child answers with any number
 * of progress and sample messages and ends with exactly one of `done`, `unavailable` or `failed`.
 */
import type { Sample } from './benchmark.js';

/** Parent → child: what to run. */
export interface JobMessage {
  readonly kind: 'job';
  readonly benchmark: string;
  readonly system: string;
  readonly records: number;
  readonly phases: readonly string[];
  readonly dataDir: string;
  readonly run: number;
}

/** Child → parent. */
export type ChildMessage =
  | { readonly kind: 'sample'; readonly sample: Sample }
  | { readonly kind: 'progress'; readonly label: string; readonly done: number; readonly total: number }
  | { readonly kind: 'done' }
  | { readonly kind: 'unavailable'; readonly reason: string }
  | { readonly kind: 'failed'; readonly message: string };
