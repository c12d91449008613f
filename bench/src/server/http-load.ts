/**
 * The HTTP case: autocannon (in this process) against `GET /v1/kv/:key` on a loopback server, random existing keys,
 * `accept: application/octet-stream` (heapless answers with the stored bytes as they are; the bare fastify route
 * answers with the same 100 bytes), a warm-up run, then a measured run.
 */
import autocannon from 'autocannon';
import { HTTP_CONNECTIONS, HTTP_MEASURE_SECONDS, HTTP_WARMUP_SECONDS } from './cases.js';
import { LOOPBACK } from './free-port.js';
import { KeyPool } from './key-pool.js';
import type { CaseResult } from './pipelined-loop.js';

/** Runs the warm-up and the measured run; throws if any request failed or answered other than 2xx. */
export async function measureHttpGet(port: number, records: number): Promise<CaseResult> {
  await run(port, records, HTTP_WARMUP_SECONDS);
  const result = await run(port, records, HTTP_MEASURE_SECONDS);
  // autocannon's latency histogram counts whole milliseconds: a p50 under 1 ms reads 0.
  return {
    opsPerSecond: result['2xx'] / result.duration,
    p50: result.latency.p50 * 1000,
    p99: result.latency.p99 * 1000,
  };
}

async function run(port: number, records: number, seconds: number): Promise<autocannon.Result> {
  const keys = new KeyPool(records);
  const result = await autocannon({
    url: `http://${LOOPBACK}:${port}`,
    connections: HTTP_CONNECTIONS,
    pipelining: 1,
    duration: seconds,
    headers: { accept: 'application/octet-stream' },
    requests: [
      {
        method: 'GET',
        setupRequest: (request) => ({ ...request, path: `/v1/kv/${keys.next()}` }),
      },
    ],
  });
  const failed = result.errors + result.timeouts + result.non2xx;
  if (failed > 0 || result['2xx'] === 0) {
    throw new Error(
      `HTTP GET on port ${port}: ${result['2xx']} answered 2xx, ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`,
    );
  }
  return result;
}
