import { type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import type { CallObserver } from '../runtime/actor-handle.js';

/**
 * Upper bounds (seconds) of the latency histogram buckets: 50 µs (a pipelined in-process call) to 10 s, roughly
 * 1-2.5-5 per decade, which is what Prometheus's histogram_quantile needs to give useful p50/p99.
 */
const LATENCY_BUCKETS = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

class MethodStats {
  ok = 0;
  failed = 0;
  sum = 0;
  readonly buckets = new Float64Array(LATENCY_BUCKETS.length);
}

/** A gauge whose value is read when the metrics are rendered. */
interface Gauge {
  name: string;
  help: string;
  read: () => number;
}

/** What the open WebSocket connections of a server hold, summed over them. */
export interface ConnectionLoad {
  /** Bytes of call frames read and not yet answered in full. */
  requestBytes: number;
  /** Bytes of replies made and not yet handed to the kernel. */
  replyBytes: number;
  /** Connections the server has stopped reading (backpressure). */
  paused: number;
}

/** GC kinds as perf_hooks numbers them (NODE_PERFORMANCE_GC_*). */
const GC_KINDS: Record<number, string> = { 1: 'major', 2: 'minor', 4: 'incremental', 8: 'weakcb' };

/**
 * The server's metrics in Prometheus text format (version 0.0.4): per-method call counters and latency histograms
 * (fed as the mailbox's {@link CallObserver}), WebSocket connections, heap and external memory, GC pauses (observed
 * through perf_hooks), and any gauges a component adds (the KV actor adds entries and off-heap bytes).
 *
 * Ownership: the creator must `close()` it, which stops the GC observer.
 */
export class Metrics implements CallObserver {
  readonly #methods = new Map<string, MethodStats>();
  readonly #gauges: Gauge[] = [];
  readonly #gc = new Map<string, { count: number; sum: number }>();
  readonly #observer: PerformanceObserver;
  /** Open WebSocket connections; publish keeps it. */
  connections = 0;
  /** WebSocket connections accepted since start. */
  connectionsTotal = 0;
  /** What the open connections hold, summed (publish sets it): bytes of requests and replies, paused connections. */
  connectionLoad: (() => ConnectionLoad) | null = null;

  constructor() {
    this.#observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) this.#onGc(e);
    });
    this.#observer.observe({ entryTypes: ['gc'] });
  }

  observe(method: string, seconds: number, ok: boolean): void {
    let s = this.#methods.get(method);
    if (s === undefined) {
      s = new MethodStats();
      this.#methods.set(method, s);
    }
    if (ok) s.ok++;
    else s.failed++;
    s.sum += seconds;
    // Linear scan: 17 buckets, and most calls fall in the first few.
    for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
      if (seconds <= LATENCY_BUCKETS[i]) {
        s.buckets[i]++;
        break;
      }
    }
  }

  /** Adds a gauge read at every render; `name` must be a valid Prometheus metric name. */
  addGauge(name: string, help: string, read: () => number): void {
    this.#gauges.push({ name, help, read });
  }

  /** Renders every metric as Prometheus text. */
  render(): string {
    const out: string[] = [];
    const head = (name: string, type: string, help: string) =>
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);

    head('heapless_calls_total', 'counter', 'Actor calls finished, by method and outcome.');
    for (const [m, s] of this.#methods) {
      out.push(`heapless_calls_total{method="${m}",outcome="ok"} ${s.ok}`);
      out.push(`heapless_calls_total{method="${m}",outcome="error"} ${s.failed}`);
    }
    head('heapless_call_duration_seconds', 'histogram', 'Time from arrival in the mailbox to completion, by method.');
    for (const [m, s] of this.#methods) {
      let cumulative = 0;
      for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
        cumulative += s.buckets[i];
        out.push(`heapless_call_duration_seconds_bucket{method="${m}",le="${LATENCY_BUCKETS[i]}"} ${cumulative}`);
      }
      out.push(`heapless_call_duration_seconds_bucket{method="${m}",le="+Inf"} ${s.ok + s.failed}`);
      out.push(`heapless_call_duration_seconds_sum{method="${m}"} ${s.sum}`);
      out.push(`heapless_call_duration_seconds_count{method="${m}"} ${s.ok + s.failed}`);
    }
    head('heapless_ws_connections', 'gauge', 'Open WebSocket connections.');
    out.push(`heapless_ws_connections ${this.connections}`);
    head('heapless_ws_connections_total', 'counter', 'WebSocket connections accepted.');
    out.push(`heapless_ws_connections_total ${this.connectionsTotal}`);
    const load = this.connectionLoad?.() ?? { requestBytes: 0, replyBytes: 0, paused: 0 };
    head('heapless_ws_request_bytes', 'gauge', 'Bytes of call frames read and not yet answered in full.');
    out.push(`heapless_ws_request_bytes ${load.requestBytes}`);
    head('heapless_ws_reply_bytes', 'gauge', 'Bytes of replies not yet handed to the kernel.');
    out.push(`heapless_ws_reply_bytes ${load.replyBytes}`);
    head('heapless_ws_paused_connections', 'gauge', 'Connections not read until their replies are written.');
    out.push(`heapless_ws_paused_connections ${load.paused}`);

    const mem = process.memoryUsage();
    head(
      'heapless_memory_bytes',
      'gauge',
      'Process memory by kind: JS heap used and total, external, array buffers, rss.',
    );
    out.push(`heapless_memory_bytes{kind="heap_used"} ${mem.heapUsed}`);
    out.push(`heapless_memory_bytes{kind="heap_total"} ${mem.heapTotal}`);
    out.push(`heapless_memory_bytes{kind="external"} ${mem.external}`);
    out.push(`heapless_memory_bytes{kind="array_buffers"} ${mem.arrayBuffers}`);
    out.push(`heapless_memory_bytes{kind="rss"} ${mem.rss}`);

    head('heapless_gc_pause_seconds', 'summary', 'Garbage-collection pauses by kind.');
    for (const [kind, g] of this.#gc) {
      out.push(`heapless_gc_pause_seconds_sum{kind="${kind}"} ${g.sum}`);
      out.push(`heapless_gc_pause_seconds_count{kind="${kind}"} ${g.count}`);
    }
    for (const g of this.#gauges) {
      head(g.name, 'gauge', g.help);
      out.push(`${g.name} ${g.read()}`);
    }
    return `${out.join('\n')}\n`;
  }

  /** Stops observing GC. */
  close(): void {
    this.#observer.disconnect();
  }

  #onGc(e: PerformanceEntry): void {
    const kind = GC_KINDS[(e as { detail?: { kind?: number } }).detail?.kind ?? 0] ?? 'other';
    let g = this.#gc.get(kind);
    if (g === undefined) {
      g = { count: 0, sum: 0 };
      this.#gc.set(kind, g);
    }
    g.count++;
    g.sum += e.duration / 1000;
  }
}
