/**
 * The `watch` workload, in the harness's child process. A `heapless serve --data` child on a fresh directory; a
 * writer in this process sets the `server` benchmark's keys and 100-byte values over one WebSocket, {@link DEPTH}
 * calls pipelined and awaited at a time, for {@link WINDOW_MS}; meanwhile 0, 1 or 100 watchers of every key (each
 * its own connection, in a forked process: watchers.ts) count what they receive.
 *
 * The three alternate (their order rotating) in rounds for the whole run, the first round a warm-up, so that the
 * machine's noise falls on all alike and the ratios of the writer's throughput with watchers to without mean
 * something in one run. A window's changes/s delivered are the changes every watcher received, written in the window,
 * divided by the time from the window's start until the slowest watcher had the last of them.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KvActor } from '@heapless/actor';
import type { BenchmarkWorkload, RunContext } from '../harness/benchmark.js';
import { hundredByteValue } from '../server/cases.js';
import { startHeaplessServe } from '../server/heapless-serve.js';
import { KeyPool } from '../server/key-pool.js';
import { ProcessGroup } from '../server/process-group.js';
import type { FromWatchers, ToWatchers } from './watcher-messages.js';

/** Calls in flight at a time: the `server` benchmark's `set depth 1000`. */
const DEPTH = 1000;
/** How long the writer writes per window. */
const WINDOW_MS = 2000;
/** Rounds after the warm-up one; each runs every watcher count once. */
const ROUNDS = 3;
/** No watcher (the baseline), one, and many watchers. */
const COUNTS = [0, 1, 100] as const;
/** The longest wait for the watchers to have a window's last change. */
const CATCH_UP_TIMEOUT_MS = 120_000;

export const watchWorkload: BenchmarkWorkload = {
  async run(ctx: RunContext): Promise<void> {
    if (ctx.system !== 'heapless') throw new Error(`watch has no system '${ctx.system}'`);
    if (ctx.phases.has('watch')) await runWatch(ctx);
  },
};

/** The forked watcher process, one request at a time. */
class Watchers {
  readonly #child: ChildProcess;
  #waiting: ((m: FromWatchers) => void) | null = null;
  /** Why the process is gone, once it is: a question then fails instead of waiting for ever. */
  #gone: string | null = null;

  constructor() {
    this.#child = fork(new URL('./watchers.js', import.meta.url), { stdio: 'inherit' });
    this.#child.on('message', (m: FromWatchers) => {
      const w = this.#waiting;
      this.#waiting = null;
      w?.(m);
    });
    this.#child.on('exit', (code, signal) => {
      this.#gone = `exited (${signal ?? code})`;
      const w = this.#waiting;
      this.#waiting = null;
      w?.({ type: 'failed', message: this.#gone });
    });
  }

  /** The watcher process's pid (for its CPU time). */
  get pid(): number | undefined {
    return this.#child.pid;
  }

  ask(m: ToWatchers): Promise<FromWatchers> {
    return new Promise((resolve, reject) => {
      if (this.#gone !== null) {
        reject(new Error(`watcher process: ${this.#gone}`));
        return;
      }
      this.#waiting = (answer) => {
        if (answer.type === 'failed') reject(new Error(`watcher process: ${answer.message}`));
        else resolve(answer);
      };
      this.#child.send(m);
    });
  }

  async close(): Promise<void> {
    if (this.#child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    this.#child.kill('SIGTERM');
    await exited;
  }
}

/**
 * CPU seconds (user and system) the process `pid` has used, from `/proc/<pid>/stat` (Linux; clock ticks of 10 ms),
 * or NaN where it cannot be read. The server's own cost per write, apart from what the watchers' process takes of a
 * shared machine.
 */
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime (fields 14 and 15 of stat)
  } catch {
    return Number.NaN;
  }
}

interface Totals {
  /** Server CPU seconds over the windows (writes and their delivery until the watchers had them). */
  serverCpu: number;
  /** The same of the writer's process (this one) and of the watchers' process. */
  writerCpu: number;
  watchersCpu: number;
  writes: number;
  writeMs: number;
  delivered: number;
  deliverMs: number;
  overflows: number;
}

async function runWatch(ctx: RunContext): Promise<void> {
  const { connect } = await import('@heapless/client');
  const group = new ProcessGroup();
  const watchers = new Watchers();
  try {
    const { server, url } = await startHeaplessServe(group, join(ctx.dataDir, 'server'), { readyTimeoutMs: 60_000 });
    const kv = await connect<typeof KvActor>(url, { reconnect: false });
    const totals = new Map<number, Totals>(
      COUNTS.map((n) => [
        n,
        { serverCpu: 0, writerCpu: 0, watchersCpu: 0, writes: 0, writeMs: 0, delivered: 0, deliverMs: 0, overflows: 0 },
      ]),
    );
    try {
      const keys = new KeyPool(ctx.records);
      const value = hundredByteValue();
      const progress = ctx.progress('watch: writer with 0 / 1 / 100 watchers', (ROUNDS + 1) * COUNTS.length);
      let step = 0;
      for (let round = 0; round <= ROUNDS; round++) {
        for (let i = 0; i < COUNTS.length; i++) {
          const count = COUNTS[(i + round) % COUNTS.length]!;
          if (count > 0) await watchers.ask({ type: 'open', url, count });
          const cpu0 = cpuSeconds(server.pid);
          const writerCpu0 = cpuSeconds(process.pid);
          const watchersCpu0 = cpuSeconds(watchers.pid);
          const t0 = performance.now();
          let writes = 0;
          const calls = new Array<Promise<void>>(DEPTH);
          while (performance.now() - t0 < WINDOW_MS) {
            for (let j = 0; j < DEPTH; j++) calls[j] = kv.set(keys.next(), value);
            await Promise.all(calls);
            writes += DEPTH;
          }
          const writeMs = performance.now() - t0;
          const { sequence } = await kv.setMany([[keys.next(), value]]);
          let delivered = 0;
          let overflows = 0;
          if (count > 0) {
            for (;;) {
              const r = await watchers.ask({ type: 'report' });
              if (r.type !== 'report') throw new Error(`unexpected ${r.type}`);
              delivered = r.received;
              overflows = r.overflows;
              if (r.minSequence >= sequence!) break;
              if (performance.now() - t0 > CATCH_UP_TIMEOUT_MS) throw new Error('the watchers did not catch up');
              await new Promise((resolve) => setTimeout(resolve, 5));
            }
          }
          const deliverMs = performance.now() - t0;
          const serverCpu = cpuSeconds(server.pid) - cpu0;
          const writerCpu = cpuSeconds(process.pid) - writerCpu0;
          const watchersCpu = cpuSeconds(watchers.pid) - watchersCpu0;
          if (count > 0) await watchers.ask({ type: 'close' });
          if (round > 0) {
            const t = totals.get(count)!;
            t.writes += writes;
            t.writeMs += writeMs;
            t.delivered += delivered;
            t.deliverMs += deliverMs;
            t.overflows += overflows;
            t.serverCpu += serverCpu;
            t.writerCpu += writerCpu;
            t.watchersCpu += watchersCpu;
          }
          progress.update(++step);
        }
      }
      progress.finish();
    } finally {
      await kv.close();
    }
    await group.stop(server);
    report(ctx, totals);
  } finally {
    await watchers.close();
    await group.close();
  }
}

function report(ctx: RunContext, totals: Map<number, Totals>): void {
  const writer = (n: number) => (totals.get(n)!.writes * 1000) / totals.get(n)!.writeMs;
  const label = (n: number) => (n === 0 ? 'no watcher' : n === 1 ? '1 watcher' : `${n} watchers`);
  /** Server CPU µs per set, its delivery to every watcher included. */
  const cpuPerSet = (n: number) => (totals.get(n)!.serverCpu * 1e6) / totals.get(n)!.writes;
  /**
   * Cores busy over the windows, the three processes together: on a small machine the watchers' own decoding takes
   * the cores the server and the writer would use, which the writer's ratio then shows.
   */
  const cores = (n: number) => {
    const t = totals.get(n)!;
    return (t.serverCpu + t.writerCpu + t.watchersCpu) / (t.deliverMs / 1000);
  };
  for (const n of COUNTS) {
    ctx.record({ case: `writer, ${label(n)}`, metric: 'sets/s', value: writer(n), unit: 'ops/s', better: 'higher' });
    if (Number.isFinite(cpuPerSet(n))) {
      ctx.record({
        case: `server CPU per set, ${label(n)}`,
        metric: 'cpu',
        value: cpuPerSet(n),
        unit: 'µs',
        better: 'lower',
      });
      const t = totals.get(n)!;
      ctx.record({
        case: `cores busy (server + writer + watchers), ${label(n)}`,
        metric: 'cpu',
        value: cores(n),
        unit: 'cores',
        better: 'lower',
      });
      if (n > 0) {
        ctx.record({
          case: `watchers' process CPU per set, ${label(n)}`,
          metric: 'cpu',
          value: (t.watchersCpu * 1e6) / t.writes,
          unit: 'µs',
          better: 'lower',
        });
      }
    }
  }
  for (const n of COUNTS.filter((c) => c > 0)) {
    const t = totals.get(n)!;
    ctx.record({
      case: `writer with ${label(n)} ÷ with none`,
      metric: 'ratio',
      value: writer(n) / writer(0),
      unit: '×',
      better: 'higher',
    });
    ctx.record({
      case: `changes delivered to ${label(n)} (all together)`,
      metric: 'changes/s',
      value: (t.delivered * 1000) / t.deliverMs,
      unit: 'ops/s',
      better: 'higher',
    });
    ctx.record({
      case: `${label(n)}: WATCH_OVERFLOW resumes`,
      metric: 'count',
      value: t.overflows,
      unit: '',
      better: 'lower',
    });
  }
}
