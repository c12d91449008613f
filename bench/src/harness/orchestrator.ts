/**
 * Plans and runs a benchmark: one child process per (system, run), fresh data directory each, runs interleaved.
 *
 * Order: a warm-up round (every system once, results discarded), then rounds 1..K, each running every system once.
 * Interleaving rounds instead of running one system K times in a row puts run r of every system close together in
 * time, which is what makes run-by-run ratios resistant to the machine's background load.
 */
import { fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchmarkDefinition, Sample } from './benchmark.js';
import type { ChildMessage, JobMessage } from './ipc-messages.js';
import type { ProgressDisplay } from './progress-display.js';
import type { Series } from './statistics.js';

/** What the user asked for. */
export interface RunPlan {
  readonly definition: BenchmarkDefinition;
  readonly systems: readonly string[];
  readonly phases: readonly string[];
  readonly records: number;
  readonly runs: number;
  /** Aborting kills the running child (its data directory is still removed) and rejects. */
  readonly signal?: AbortSignal;
}

/** Everything measured: the series of every available system, and why the others are missing. */
export interface RunResults {
  readonly series: Series[];
  readonly unavailable: ReadonlyMap<string, string>;
}

/** The outcome of one child process. */
interface ChildOutcome {
  readonly samples: Sample[];
  readonly status: 'done' | 'unavailable';
  readonly reason?: string;
}

const RUNNER = new URL('./runner.js', import.meta.url);

/** Runs the plan; a failed child (crash or workload error) rejects with its message. */
export async function runPlan(plan: RunPlan, display: ProgressDisplay): Promise<RunResults> {
  const unavailable = new Map<string, string>();
  const bySeries = new Map<string, { sample: Sample; system: string; runs: (number | undefined)[] }>();

  try {
    for (let run = 0; run <= plan.runs; run++) {
      for (const system of plan.systems) {
        if (unavailable.has(system)) continue;
        const label = `${run === 0 ? 'warm-up' : `run ${run}/${plan.runs}`} ${system}`;
        const started = performance.now();
        const outcome = await runChild(plan, system, run, label, display);
        if (outcome.status === 'unavailable') {
          unavailable.set(system, outcome.reason ?? 'not available');
          display.log(`${label}: not available (${outcome.reason})`);
          continue;
        }
        display.log(`${label}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
        if (run === 0) continue;
        for (const sample of outcome.samples) {
          const key = `${system}\u0000${sample.case}\u0000${sample.metric}`;
          let entry = bySeries.get(key);
          if (entry === undefined) {
            entry = { sample, system, runs: new Array<number | undefined>(plan.runs).fill(undefined) };
            bySeries.set(key, entry);
          }
          entry.runs[run - 1] = sample.value;
        }
      }
    }
  } finally {
    display.stop();
  }

  const series: Series[] = [...bySeries.values()].map(({ sample, system, runs }) => ({
    system,
    case: sample.case,
    metric: sample.metric,
    unit: sample.unit,
    better: sample.better,
    runs,
  }));
  return { series, unavailable };
}

/** Forks the runner for one (system, run) in a fresh temporary directory, which is removed whatever happens. */
async function runChild(
  plan: RunPlan,
  system: string,
  run: number,
  label: string,
  display: ProgressDisplay,
): Promise<ChildOutcome> {
  const dataDir = await mkdtemp(join(tmpdir(), `heapless-bench-${system}-`));
  try {
    return await new Promise<ChildOutcome>((resolve, reject) => {
      const child = fork(RUNNER, [], {
        execArgv: [...process.execArgv, ...(plan.definition.execArgv ?? [])],
        // The child's stdout goes to our stderr: stdout carries only the table.
        stdio: ['ignore', 2, 2, 'ipc'],
        ...(plan.signal === undefined ? {} : { signal: plan.signal }),
      });
      const samples: Sample[] = [];
      let ending: ChildMessage | undefined;
      child.on('message', (message: ChildMessage) => {
        switch (message.kind) {
          case 'sample':
            samples.push(message.sample);
            break;
          case 'progress':
            display.update(`${label} ${message.label}`, message.done, message.total);
            break;
          default:
            ending = message;
        }
      });
      child.once('error', (error) => reject(plan.signal?.aborted ? new Error('interrupted') : error));
      child.once('exit', (code, signal) => {
        if (plan.signal?.aborted) reject(new Error('interrupted'));
        else if (ending?.kind === 'done') resolve({ samples, status: 'done' });
        else if (ending?.kind === 'unavailable') resolve({ samples, status: 'unavailable', reason: ending.reason });
        else if (ending?.kind === 'failed') reject(new Error(`${label} failed:\n${ending.message}`));
        else reject(new Error(`${label}: the child process ended without a result (code ${code}, signal ${signal})`));
      });
      const job: JobMessage = {
        kind: 'job',
        benchmark: plan.definition.name,
        system,
        records: plan.records,
        phases: plan.phases,
        dataDir,
        run,
      };
      child.send(job);
    });
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}
