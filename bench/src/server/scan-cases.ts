/**
 * The `scan` phase of `heapless`: what one ordered page costs among N keys, and what a client paging through the
 * whole keyspace costs every other client (a full scan must not starve the others). Over the typed client, one
 * WebSocket per role.
 *
 * - `scan page, after a random key`: `scan({ cursor: <random key>, limit: 100 })`, the round trip of one page.
 * - `scan page, prefix of 1,000 keys`: `scan({ prefix: 'key:<9 digits>', limit: 100 })`, the first page of a prefix
 *   that 1,000 keys share (the case the issue measured at ~270 ms when a page walked the hash index).
 * - `get depth 1, no scan` then `get depth 1, during a full scan`: the same closed loop of single gets, alone and
 *   while another client, in a process of its own (scan-loop.ts), pages through every key again and again (pages
 *   of 100, each awaited); the ratio row `p99 ÷ no-scan p99` is the goal (≤ 2). A control case runs the
 *   same loop beside another client process making gets instead, so that `p99 ÷ beside-gets p99` separates what
 *   the scan costs from what any busy second client costs on a small machine.
 */
import { fork } from 'node:child_process';
import type { KvActor } from '@heapless/actor';
import { connect } from '@heapless/client';
import type { RunContext } from '../harness/benchmark.js';
import { LatencyRecorder } from '../harness/latency-histogram.js';
import { Xorshift32 } from '../harness/xorshift32.js';
import { keyOf } from './cases.js';
import { KeyPool } from './key-pool.js';
import { type CaseResult, measureBatches, reportCase } from './pipelined-loop.js';
import type { ScanLoopMessage } from './scan-loop.js';

/** Entries per page, the KV actor's default. */
const PAGE = 100;
/** Pages measured per page case, after {@link WARMUP_PAGES}. */
const PAGES = 2_000;
const WARMUP_PAGES = 200;
const SEED = 0x5ca1_0011;
/** The other client's script, compiled beside this file. */
const SCAN_LOOP = new URL('./scan-loop.js', import.meta.url).pathname;

type Kv = Awaited<ReturnType<typeof connect<typeof KvActor>>>;

/** Runs the scan cases against the server at `url` holding `records` keys `key:<12 digits>`. */
export async function runScanCases(ctx: RunContext, url: string, records: number): Promise<void> {
  const kv = await connect<typeof KvActor>(url, { reconnect: false });
  try {
    const random = new Xorshift32(SEED);
    await measurePages(ctx, 'scan page, after a random key', () =>
      kv.scan({ cursor: keyOf(random.below(records)), limit: PAGE }),
    );
    const prefixes = Math.max(1, Math.floor(records / 1000));
    await measurePages(ctx, 'scan page, prefix of 1,000 keys', () =>
      kv.scan({ prefix: keyOf(random.below(prefixes) * 1000).slice(0, -3), limit: PAGE }),
    );
    await measureGetsBesideScan(ctx, kv, url, records);
  } finally {
    await kv.close();
  }
}

/** Times `page()` {@link PAGES} times, one at a time; reports p50 and p99 in ms. Every page must hold entries. */
async function measurePages(
  ctx: RunContext,
  label: string,
  page: () => Promise<{ entries: unknown[] }>,
): Promise<void> {
  ctx.progress(label, 1).finish();
  for (let i = 0; i < WARMUP_PAGES; i++) await page();
  const latency = new LatencyRecorder();
  try {
    for (let i = 0; i < PAGES; i++) {
      const t0 = latency.start();
      const { entries } = await page();
      latency.stop(t0);
      if (entries.length === 0) throw new Error(`heapless: ${label} answered an empty page`);
    }
    for (const p of [50, 99]) {
      ctx.record({
        case: label,
        metric: `p${p}`,
        value: latency.percentileMicros(p) / 1000,
        unit: 'ms',
        better: 'lower',
      });
    }
  } finally {
    latency.destroy();
  }
}

/**
 * Single gets alone, beside another client process making gets of its own (the control: what any busy second client
 * costs on this machine, CPU included), and beside one paging through the keyspace in a loop (scan-loop.ts).
 */
async function measureGetsBesideScan(ctx: RunContext, kv: Kv, url: string, records: number): Promise<void> {
  const keys = new KeyPool(records);
  const get = async (): Promise<void> => {
    if ((await kv.get(keys.next())) === undefined) throw new Error('heapless: a preloaded key was not found');
  };
  const aloneLabel = 'get depth 1, no scan';
  ctx.progress(aloneLabel, 1).finish();
  const alone = await measureBatches(get, 1);
  reportCase(ctx, aloneLabel, alone);
  const control = await besideOtherClient(ctx, 'get depth 1, beside another client’s gets', 'gets', url, records, get);
  const during = await besideOtherClient(ctx, 'get depth 1, during a full scan', 'scan', url, records, get);
  const label = 'get depth 1, during a full scan';
  ctx.record({ case: label, metric: 'p99 ÷ no-scan p99', value: during.p99 / alone.p99, unit: '×', better: 'lower' });
  ctx.record({
    case: label,
    metric: 'p99 ÷ beside-gets p99',
    value: during.p99 / control.p99,
    unit: '×',
    better: 'lower',
  });
}

/** Measures `get` while a scan-loop process runs in `mode`; reports the case and the other client's keys/s. */
async function besideOtherClient(
  ctx: RunContext,
  label: string,
  mode: 'scan' | 'gets',
  url: string,
  records: number,
  get: () => Promise<void>,
): Promise<CaseResult> {
  ctx.progress(label, 1).finish();
  const other = fork(SCAN_LOOP, [url, mode, String(records)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<number | null>((resolve) => other.once('exit', resolve));
  const messages: ScanLoopMessage[] = [];
  let notify = (): void => {};
  other.on('message', (m: ScanLoopMessage) => {
    messages.push(m);
    notify();
  });
  /** The other client's next message, or an error if it exits first. */
  const next = async (): Promise<ScanLoopMessage> => {
    while (messages.length === 0) {
      const code = await Promise.race([exited, new Promise<'message'>((r) => (notify = () => r('message')))]);
      if (code !== 'message') throw new Error(`heapless: the other client exited (${code}) before it reported`);
    }
    return messages.shift()!;
  };
  try {
    if ((await next()).t !== 'ready') throw new Error('heapless: the other client did not start');
    const result = await measureBatches(get, 1);
    other.send('stop');
    const done = await next();
    if (done.t !== 'done' || done.keys === 0) throw new Error('heapless: the other client read no key');
    reportCase(ctx, label, result);
    ctx.record({
      case: label,
      metric: 'other client keys/s',
      value: done.keys / done.seconds,
      unit: 'keys/s',
      better: 'higher',
    });
    return result;
  } finally {
    if (other.exitCode === null) other.kill('SIGKILL');
    await exited;
  }
}
