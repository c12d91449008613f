/**
 * The `codec` workload, in the harness's child process, for one codec (the system):
 *
 * - encode / decode: N records (`--records`) encoded to bytes, and N messages decoded, cycling over 4,096 varied
 *   records; ops/s, and the encoded bytes per record. `min(encode, decode)` is its own row: what a sender and a
 *   receiver of this codec can sustain together (seed 003's point: one fast side does not make a fast pipe).
 * - websocket / tcp: a sender on this thread encodes each record and sends it; a receiver on a worker thread (the
 *   other core) decodes each one. One message per WebSocket frame (`ws`, as a client of the receiver's server); on
 *   TCP, length-prefixed messages written in 64 KiB writes, as a raw transport batches them. Messages/s from the
 *   first send until the receiver has decoded the last.
 */
import { once } from 'node:events';
import { connect as tcpConnect } from 'node:net';
import { Worker } from 'node:worker_threads';
import { WebSocket } from 'ws';
import type { BenchmarkWorkload, ProgressTicker, RunContext } from '../harness/benchmark.js';
import { type Codec, checkRoundTrip, codecOf, type PriceUpdate, priceUpdates } from './price-update.js';

/** Distinct records cycled through: enough that no codec sees the same object twice in a row in its caches. */
const POOL = 4096;
/** Messages over a loopback connection, as a fraction of `--records`: the transports are slower than the codecs. */
const LOOPBACK_SHARE = 0.25;
/** Bytes queued in the WebSocket before the sender waits: enough to keep the pipe full, bounded in memory. */
const WS_HIGH_WATER = 4 << 20;
/** Bytes per TCP write. */
const TCP_CHUNK = 64 << 10;

export const codecWorkload: BenchmarkWorkload = {
  async run(ctx: RunContext): Promise<void> {
    const records = priceUpdates(POOL);
    const codec = codecOf(ctx.system, records[0]!);
    if (codec === undefined) throw new Error(`codec has no system '${ctx.system}'`);
    checkRoundTrip(ctx.system, codec, codecOf(ctx.system, records[0]!)!, records);
    let encodeRate = 0;
    let decodeRate = 0;
    if (ctx.phases.has('encode')) encodeRate = encodePhase(ctx, codec, records);
    if (ctx.phases.has('decode')) decodeRate = decodePhase(ctx, codec, records);
    if (encodeRate > 0 && decodeRate > 0)
      ctx.record({
        case: 'min(encode, decode)',
        metric: 'ops/s',
        value: Math.min(encodeRate, decodeRate),
        unit: 'ops/s',
        better: 'higher',
      });
    const messages = Math.max(1000, Math.round(ctx.records * LOOPBACK_SHARE));
    if (ctx.phases.has('websocket')) await loopback(ctx, 'websocket', codec, records, messages);
    if (ctx.phases.has('tcp')) await loopback(ctx, 'tcp', codec, records, messages);
  },
};

function encodePhase(ctx: RunContext, codec: Codec, records: readonly PriceUpdate[]): number {
  const n = ctx.records;
  const tick = ctx.progress('encode', n);
  let bytes = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    bytes += codec.encode(records[i & (POOL - 1)]!).length;
    if ((i & 0xffff) === 0) tick.update(i);
  }
  const ms = performance.now() - t0;
  tick.finish();
  const rate = (n / ms) * 1000;
  ctx.record({ case: 'encode', metric: 'ops/s', value: rate, unit: 'ops/s', better: 'higher' });
  ctx.record({ case: 'encode', metric: 'bytes per record', value: bytes / n, unit: 'B', better: 'lower' });
  return rate;
}

function decodePhase(ctx: RunContext, codec: Codec, records: readonly PriceUpdate[]): number {
  const n = ctx.records;
  const messages = records.map((r) => codec.encode(r).slice());
  const tick = ctx.progress('decode', n);
  let fields = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const v = codec.decode(messages[i & (POOL - 1)]!) as { bid?: number };
    if (v.bid !== undefined) fields++;
    if ((i & 0xffff) === 0) tick.update(i);
  }
  const ms = performance.now() - t0;
  tick.finish();
  if (fields !== n) throw new Error(`decode: ${n - fields} records without a bid`);
  const rate = (n / ms) * 1000;
  ctx.record({ case: 'decode', metric: 'ops/s', value: rate, unit: 'ops/s', better: 'higher' });
  return rate;
}

/** Sends `count` messages to a receiver thread over `transport` and records messages/s. */
async function loopback(
  ctx: RunContext,
  transport: 'websocket' | 'tcp',
  codec: Codec,
  records: readonly PriceUpdate[],
  count: number,
): Promise<void> {
  const worker = new Worker(new URL('./receiver.js', import.meta.url), {
    workerData: { system: ctx.system, transport, count },
  });
  try {
    const [port] = (await once(worker, 'message')) as [number];
    const done = once(worker, 'message') as Promise<[{ decoded: number; ok: number }]>;
    const tick = ctx.progress(`${transport} messages`, count);
    const t0 = performance.now();
    if (transport === 'websocket') await sendWebSocket(port, codec, records, count, tick);
    else await sendTcp(port, codec, records, count, tick);
    const [result] = await done;
    const ms = performance.now() - t0;
    tick.finish();
    if (result.ok !== count) throw new Error(`${transport}: ${result.ok} of ${count} messages decoded right`);
    ctx.record({
      case: `${transport} send + receive`,
      metric: 'messages/s',
      value: (count / ms) * 1000,
      unit: 'ops/s',
      better: 'higher',
    });
  } finally {
    await worker.terminate();
  }
}

async function sendWebSocket(
  port: number,
  codec: Codec,
  records: readonly PriceUpdate[],
  count: number,
  tick: ProgressTicker,
): Promise<void> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: false });
  await once(ws, 'open');
  for (let i = 0; i < count; i++) {
    const bytes = codec.encode(records[i & (POOL - 1)]!);
    // ws may keep a reference until the socket takes the bytes: a reused buffer is copied first.
    ws.send(codec.reusesBuffer ? bytes.slice() : bytes, { binary: true });
    if ((i & 0x3ff) === 0) {
      tick.update(i);
      while (ws.bufferedAmount > WS_HIGH_WATER) await new Promise((r) => setImmediate(r));
    }
  }
  // The receiver closes once it has decoded the last message.
  await once(ws, 'close');
}

async function sendTcp(
  port: number,
  codec: Codec,
  records: readonly PriceUpdate[],
  count: number,
  tick: ProgressTicker,
): Promise<void> {
  const socket = tcpConnect({ port, host: '127.0.0.1', noDelay: true });
  await once(socket, 'connect');
  const closed = once(socket, 'close');
  let chunk = Buffer.allocUnsafe(TCP_CHUNK);
  let at = 0;
  const flush = async () => {
    if (at === 0) return;
    const full = socket.write(chunk.subarray(0, at));
    chunk = Buffer.allocUnsafe(TCP_CHUNK);
    at = 0;
    if (!full) await once(socket, 'drain');
  };
  for (let i = 0; i < count; i++) {
    const bytes = codec.encode(records[i & (POOL - 1)]!);
    if (at + 4 + bytes.length > TCP_CHUNK) await flush();
    chunk.writeUInt32LE(bytes.length, at);
    chunk.set(bytes, at + 4);
    at += 4 + bytes.length;
    if ((i & 0x3ff) === 0) tick.update(i);
  }
  await flush();
  socket.end();
  await closed;
}
