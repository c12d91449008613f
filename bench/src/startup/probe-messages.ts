/**
 * What a probe process sends back to the run that forked it (over the fork's IPC channel), and the cases every
 * probe reports, so that the parent, the probes and the README agree on names.
 */
import type { Sample } from '../harness/benchmark.js';

/** The probe's one message: its samples, or why it failed. */
export type ProbeMessage =
  | { readonly kind: 'samples'; readonly samples: Sample[] }
  | { readonly kind: 'failed'; readonly message: string };

/**
 * The row every system reports (in ms), so that each gets its ratio to `fs-read` in the same run: from calling
 * open to holding the first record — for `fs-read`, the time to read every file of the engine directory.
 */
export const START_CASE = 'start: open + load + first get';

/**
 * The row of `offheap-crash` alone: from calling open until the WAL writes replayed onto the image are all in the
 * map's memory (the open returns before that, and they go in in the background).
 */
export const REPLAYED_CASE = 'start: until the replay is in memory';

/** Memory of the probe process after the load and two forced full GCs. */
export const MEMORY_CASE = 'after load';
