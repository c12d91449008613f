/**
 * The contract between the harness and a benchmark.
 *
 * A benchmark is two halves that live in different processes:
 * - its {@link BenchmarkDefinition} (name, systems, baseline, phases) is read by the parent, which plans the runs;
 * - its {@link BenchmarkWorkload} runs in a child process, one system and one run per process, and reports samples
 *   through a {@link RunContext}.
 * The definition module must stay light (no native modules, nothing of @heapless/*), because the parent loads it;
 * the workload is imported only inside the child.
 */

/** Which direction of a metric is good; carried into the JSON so that comparisons across commits can be automated. */
export type Better = 'higher' | 'lower';

/** One measured figure of one run of one system. */
export interface Sample {
  /** What was exercised, e.g. `put` or `get-random (getSync)`. */
  readonly case: string;
  /** What was measured, e.g. `ops/s`, `bytes`, `p99`. */
  readonly metric: string;
  readonly value: number;
  /** Unit of `value`, e.g. `ops/s`, `B`, `µs`, `ms`. */
  readonly unit: string;
  readonly better: Better;
}

/** Counts progress through one phase; the harness throttles what it sends to the parent. */
export interface ProgressTicker {
  /** Marks `done` units (absolute, not incremental) of the phase as finished. */
  update(done: number): void;
  /** Ends the phase. */
  finish(): void;
}

/** What a workload receives in the child process. */
export interface RunContext {
  /** The system under test, one of the definition's `systems`. */
  readonly system: string;
  /** The data size the user asked for (`--records`). */
  readonly records: number;
  /** The phases to run, in the definition's order; a workload may run others first to set up state. */
  readonly phases: ReadonlySet<string>;
  /** A fresh, empty directory owned by this process; the parent removes it after the process ends. */
  readonly dataDir: string;
  /** 0 for the warm-up run (its samples are discarded), 1..K for measured runs. */
  readonly run: number;
  /** Reports one figure. */
  record(sample: Sample): void;
  /** Starts a progress display for a phase of `total` units. */
  progress(label: string, total: number): ProgressTicker;
}

/** The child-process half of a benchmark. */
export interface BenchmarkWorkload {
  /**
   * Runs every selected phase for `ctx.system` and reports samples through `ctx`.
   * Throws {@link SystemUnavailableError} when the system cannot be loaded on this machine (a missing optional
   * dependency, a package that is not built yet); any other error fails the run.
   */
  run(ctx: RunContext): Promise<void>;
}

/** The parent-process half of a benchmark: what to run and how to compare it. */
export interface BenchmarkDefinition {
  readonly name: string;
  /** One line for `--help` and the README. */
  readonly description: string;
  /** Every system the benchmark knows, in table order. */
  readonly systems: readonly string[];
  /** The system every ratio is computed against. */
  readonly baseline: string;
  /** Every phase, in execution order; `--phases` selects a subset. */
  readonly phases: readonly string[];
  readonly defaultRecords: number;
  /** Extra Node flags for the child process (e.g. `--expose-gc`). */
  readonly execArgv?: readonly string[];
  /** Imports the workload; called only in the child process. */
  loadWorkload(): Promise<BenchmarkWorkload>;
}

/**
 * Thrown by a workload when its system cannot run here. The harness reports the system as "not available" with
 * this message instead of failing the whole benchmark.
 */
export class SystemUnavailableError extends Error {
  override readonly name = 'SystemUnavailableError';
}
