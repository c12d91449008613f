// The raw TCP transport: the same sessions as the WebSocket's, as length-prefixed records after a preface
// (FORMAT.md "TCP"). One table of KV calls runs over both transports and must answer the same; hostile peers get
// the typed close record, never a crash; closing the server leaves no socket.
import { mkdtempSync, rmSync } from 'node:fs';
import { connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ActorError, KvActor, type Published, publish, spawn } from '@heapless/actor';
import { connect, HeaplessError } from '@heapless/client';
import { CLOSE_CODES, encodePreface, FrameEncoder, TcpRecordReader } from '@heapless/client/protocol';
import { OffHeapMap } from '@heapless/offheap';
import { pack, unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedBy, closedWithin, tcp, until } from './raw-socket.js';
import { selfSigned } from './self-signed.js';
import { sample, startServe } from './serve-child.js';

const TOKEN = 'tcp-token';
type Kv = Awaited<ReturnType<typeof connect<typeof KvActor>>>;

// Persisted, so that the table can watch.
const root = mkdtempSync(join(tmpdir(), 'e2e-tcp-'));
let map: OffHeapMap<string, unknown>;
let ref: ReturnType<typeof spawn<KvActor>>;
let server: Published;
beforeAll(async () => {
  map = await OffHeapMap.open<string, unknown>({ dir: join(root, 'data'), threads: 1 });
  ref = spawn(new KvActor(map), { mailbox: 4096 });
  server = await publish(ref, {
    token: TOKEN,
    tcp: { port: 0 },
    streams: KvActor.streams,
    maxFrameBytes: 64 * 1024,
    maxCallsPerFrame: 8,
    headersTimeoutMs: 1000,
    heartbeatMs: 60_000,
  });
});
afterAll(async () => {
  await server.close();
  await ref.stop();
  rmSync(root, { recursive: true, force: true });
});

/** Each KV call of the table: a name and what it does on a ref, prefixing its keys so that runs do not meet. */
const TABLE: [string, (kv: Kv, p: string) => Promise<unknown>][] = [
  ['set then get', async (kv, p) => [await kv.set(`${p}a`, pack({ n: 1 })), unpack((await kv.get(`${p}a`))!)]],
  ['get of a missing key', (kv, p) => kv.get(`${p}missing`)],
  ['has', async (kv, p) => [await kv.set(`${p}h`, pack(1)), await kv.has(`${p}h`), await kv.has(`${p}nope`)]],
  ['delete', async (kv, p) => [await kv.set(`${p}d`, pack(1)), await kv.delete(`${p}d`), await kv.delete(`${p}d`)]],
  [
    'getMany',
    async (kv, p) => {
      await kv.set(`${p}m1`, pack('x'));
      return (await kv.getMany([`${p}m1`, `${p}m2`])).map((v) => (v === undefined ? v : unpack(v)));
    },
  ],
  [
    'scan a prefix',
    async (kv, p) => {
      for (let i = 0; i < 5; i++) await kv.set(`${p}s:${i}`, pack(i));
      const page = await kv.scan({ prefix: `${p}s:` });
      return page.entries.map(([k, v]) => [k.slice(p.length), unpack(v)]);
    },
  ],
  [
    'batch and metadata',
    async (kv, p) => {
      await kv.batch(
        [
          { type: 'set', key: `${p}b1`, value: pack(1) },
          { type: 'delete', key: `${p}b1` },
          { type: 'set', key: `${p}b2`, value: pack(2) },
        ],
        { meta: { [`${p}at`]: new Uint8Array([7]) } },
      );
      return [await kv.get(`${p}b1`), unpack((await kv.get(`${p}b2`))!), await kv.getMeta(`${p}at`)];
    },
  ],
  [
    'a pipelined burst wider than maxCallsPerFrame',
    async (kv, p) => {
      const sets = await Promise.all(Array.from({ length: 50 }, (_, i) => kv.set(`${p}w:${i}`, pack(i))));
      const gets = await Promise.all(Array.from({ length: 50 }, (_, i) => kv.get(`${p}w:${i}`)));
      return [sets.length, gets.map((g) => unpack(g!))];
    },
  ],
  [
    'values of 60 KB, whose records span the socket’s chunks',
    async (kv, p) => {
      const big = Array.from({ length: 3 }, (_, i) => new Uint8Array(60_000).fill(i + 1));
      await Promise.all(big.map((v, i) => kv.set(`${p}big:${i}`, v)));
      const got = await Promise.all(big.map((_, i) => kv.get(`${p}big:${i}`)));
      return got.map((v) => [v!.length, v![0], v![59_999], Buffer.isBuffer(v)]);
    },
  ],
  ['a typed error', (kv, p) => kv.set(`${p}x`, 'not bytes' as never).catch((e: HeaplessError) => e.code)],
  ['a key too large', (kv) => kv.get('k'.repeat(5000)).catch((e: HeaplessError) => e.code)],
  [
    'a call larger than the frame limit fails alone',
    (kv, p) => kv.set(`${p}big`, new Uint8Array(100 * 1024)).catch((e: HeaplessError) => e.code),
  ],
  [
    'a watch sees a change',
    async (kv, p) => {
      const w = kv.watch(`${p}watch:`);
      const it = w[Symbol.asyncIterator]();
      const first = it.next();
      await kv.set(`${p}watch:1`, pack('w'));
      const [, key, value] = (await first).value as [number, string, Uint8Array];
      await it.return?.();
      return [key.slice(p.length), unpack(value)];
    },
  ],
];

describe('every KV call answers the same over TCP as over the WebSocket', () => {
  let ws: Kv;
  let raw: Kv;
  beforeAll(async () => {
    ws = await connect<typeof KvActor>(server.url, { token: TOKEN });
    raw = await connect<typeof KvActor>(server.tcpUrl!, { token: TOKEN });
  });
  afterAll(async () => {
    await ws.close();
    await raw.close();
  });

  it('serves TCP on its own port and URL', () => {
    expect(server.tcpUrl).toBe(`tcp://127.0.0.1:${server.tcpPort}`);
    expect(server.tcpPort).not.toBe(server.port);
  });

  it.each(TABLE)('%s', async (_name, run) => {
    const overWs = await run(ws, 'ws:');
    const overTcp = await run(raw, 'tcp:');
    expect(overTcp).toEqual(overWs);
  });
});

/** A raw TCP peer of the server's TCP port. */
function rawPeer(): Promise<Socket> {
  return tcp(server.tcpPort!);
}

/** The close record at the end of what a refused peer received: its code and reason. */
function closeOf(bytes: Buffer): { code: number; reason: string } | null {
  const reader = new TcpRecordReader(1 << 20);
  reader.push(bytes);
  for (let r = reader.next(); r !== null; r = reader.next()) if (r.close) return { code: r.code, reason: r.reason };
  return null;
}

function record(payload: Uint8Array): Buffer {
  const h = Buffer.alloc(4);
  h.writeUInt32BE(payload.length);
  return Buffer.concat([h, payload]);
}

/** Connects, sends the preface, and resolves once the hello arrived. */
async function helloPeer(port = server.tcpPort!): Promise<Socket> {
  const s = await tcp(port);
  const reader = new TcpRecordReader(1 << 20);
  const hello = new Promise<void>((resolve) =>
    s.on('data', (d: Buffer) => {
      reader.push(d);
      if (reader.next() !== null) resolve();
    }),
  );
  s.write(encodePreface(TOKEN));
  await hello;
  s.removeAllListeners('data');
  return s;
}

describe('hostile or broken peers get a typed close, never a crash', () => {
  it('a wrong token: 4401 UNAUTHORIZED, no hello; the client does not reconnect', async () => {
    const s = await rawPeer();
    s.write(encodePreface('wrong'));
    const got = await closedWithin(s, 5000);
    expect(closeOf(got)).toEqual({ code: CLOSE_CODES.UNAUTHORIZED, reason: 'UNAUTHORIZED' });
    expect(got.length).toBe(4 + 2 + 'UNAUTHORIZED'.length); // the close record only
    await expect(connect(server.tcpUrl!, { token: 'wrong' })).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    await expect(connect(server.tcpUrl!)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('garbage instead of a preface: 1002 UNSUPPORTED_PROTOCOL at its first wrong byte', async () => {
    const s = await rawPeer();
    s.write('GET / HTTP/1.1\r\n');
    expect(closeOf(await closedWithin(s, 5000))).toEqual({ code: 1002, reason: 'UNSUPPORTED_PROTOCOL' });
  });

  it('no preface, or one sent a byte at a time too slowly: closed with 1008 TIMEOUT after headersTimeoutMs', async () => {
    const silent = await rawPeer();
    const slow = await rawPeer();
    const preface = encodePreface(TOKEN);
    slow.write(preface.subarray(0, 1));
    const drip = setInterval(() => {
      if (!slow.destroyed) slow.write(preface.subarray(1, 2)); // the same byte again would be garbage
    }, 2000);
    try {
      // The server's timeout is 1 s; 5 s leaves room for a loaded machine.
      const [a, b] = await Promise.all([closedWithin(silent, 5000), closedWithin(slow, 5000)]);
      expect(closeOf(a)).toEqual({ code: CLOSE_CODES.POLICY, reason: 'TIMEOUT' });
      expect(closeOf(b)).toEqual({ code: CLOSE_CODES.POLICY, reason: 'TIMEOUT' });
    } finally {
      clearInterval(drip);
    }
  });

  it('a length prefix over the frame limit: 1009 FRAME_TOO_LARGE, before any of its bytes', async () => {
    const s = await helloPeer();
    const h = Buffer.alloc(4);
    h.writeUInt32BE(0x7fff_ffff);
    s.write(h); // the header alone: the server must not wait for 2 GiB
    expect(closeOf(await closedWithin(s, 5000))).toEqual({ code: 1009, reason: 'FRAME_TOO_LARGE' });
  });

  it('garbage in a record: 1007 BAD_FRAME; too many calls: 1008 TOO_MANY_CALLS', async () => {
    const a = await helloPeer();
    a.write(record(new Uint8Array([0xc1, 0xc1, 0xc1])));
    expect(closeOf(await closedWithin(a, 5000))).toEqual({ code: 1007, reason: 'BAD_FRAME' });
    const b = await helloPeer();
    const calls = Array.from({ length: 9 }, (_, i) => [i + 1, 'has', ['k']]);
    b.write(record(new FrameEncoder().encodeDetached(calls)));
    expect(closeOf(await closedWithin(b, 5000))).toEqual({ code: 1008, reason: 'TOO_MANY_CALLS' });
  });

  it('a bad close record: 1007 BAD_FRAME', async () => {
    const s = await helloPeer();
    const h = Buffer.alloc(4);
    h.writeUInt32BE((0x8000_0000 | 1000) >>> 0);
    s.write(h);
    expect(closeOf(await closedWithin(s, 5000))).toEqual({ code: 1007, reason: 'BAD_FRAME' });
  });

  it('a truncated frame, then the peer goes away: the session ends, the server still serves', async () => {
    const s = await helloPeer();
    const full = record(new FrameEncoder().encodeDetached([[1, 'has', ['k']]]));
    s.write(full.subarray(0, full.length - 2));
    await new Promise((r) => setTimeout(r, 50));
    s.destroy();
    const kv = await connect<typeof KvActor>(server.tcpUrl!, { token: TOKEN });
    expect(await kv.has('k')).toBe(false);
    await kv.close();
  });

  it('a half-open peer (it ended its side) is answered and closed', async () => {
    const s = await helloPeer();
    const got = closedBy(s);
    s.end(record(new FrameEncoder().encodeDetached([[1, 'has', ['k']]])));
    const bytes = await got;
    const reader = new TcpRecordReader(1 << 20);
    reader.push(bytes);
    const reply = reader.next();
    expect(reply?.close).toBe(false);
  });

  it('a peer that answers no heartbeat is closed by the next one', async () => {
    const hb = await publish(ref, { tcp: {}, heartbeatMs: 200 });
    try {
      const s = await tcp(hb.tcpPort!);
      s.write(encodePreface(undefined)); // then reads, but never answers a heartbeat
      await closedWithin(s, 10_000); // 200 to 400 ms on a quiet machine
    } finally {
      await hb.close();
    }
  });
});

describe('the per-connection bounds', () => {
  it('past maxInFlight the server stops reading, then goes on with the records it already read', async () => {
    const small = await publish(ref, { tcp: {}, maxInFlight: 4 });
    try {
      const s = await helloPeer(small.tcpPort!);
      const encoder = new FrameEncoder();
      const n = 200;
      // One write of n records of one call each: most of them arrive in the chunk that makes the session pause.
      const records = Array.from({ length: n }, (_, i) => record(encoder.encodeDetached([[i + 1, 'has', ['k']]])));
      const reader = new TcpRecordReader(1 << 20);
      const ids: number[] = [];
      const done = new Promise<void>((resolve) =>
        s.on('data', (d: Buffer) => {
          reader.push(d);
          for (let r = reader.next(); r !== null; r = reader.next()) {
            if (r.close) continue;
            for (const reply of unpack(r.bytes) as [number, unknown][]) ids.push(reply[0]);
          }
          if (ids.length === n) resolve();
        }),
      );
      s.write(Buffer.concat(records));
      await done;
      expect(ids).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      s.destroy();
    } finally {
      await small.close();
    }
  });
});

describe('a TCP peer that never reads', () => {
  it('is paused with at most maxReplyBytes and one reply held, as a WebSocket peer is', async () => {
    const VALUE = 256 * 1024;
    const child = await startServe(['--memory', '--tcp-port', '0']);
    try {
      const tcpUrl = child.lines.find((l) => l.msg === 'listening')!.tcp as string;
      const metrics = async () => `\n${await (await fetch(`${child.httpUrl}/metrics`)).text()}`;
      const kv = await connect<typeof KvActor>(child.url, { timeoutMs: 20_000 });
      const value = pack(new Uint8Array(VALUE - 8));
      await Promise.all(Array.from({ length: 16 }, (_, i) => kv.set(`big:${i}`, value)));
      const socket = await tcp(Number(new URL(tcpUrl).port));
      socket.pause(); // never reads, not even the hello
      socket.write(encodePreface(undefined));
      const encoder = new FrameEncoder();
      for (let f = 0; f < 16; f++) {
        const calls = Array.from({ length: 256 }, (_, i) => [f * 256 + i + 1, 'get', [`big:${i % 16}`]]);
        socket.write(record(encoder.encodeDetached(calls)));
      }
      // Until the server stopped answering it: the count of gets stays put (a wait, not a speed assertion).
      let last = -1;
      await until(
        async () => {
          const gets = sample(await metrics(), 'heapless_calls_total{method="get",outcome="ok"}');
          const settled = gets === last;
          last = gets;
          return settled;
        },
        'the server stops answering the peer that does not read',
        60_000,
        500,
      );
      const m = await metrics();
      expect(sample(m, 'heapless_ws_paused_connections')).toBe(1);
      expect(sample(m, 'heapless_ws_reply_bytes')).toBeLessThanOrEqual(1024 * 1024 + VALUE + 64);
      expect(last).toBeLessThan(4096);
      expect(await kv.has('big:0')).toBe(true); // and the others are still served
      socket.destroy();
      await kv.close();
    } finally {
      child.proc.kill('SIGKILL');
      await child.exited;
    }
  });
});

describe('the server side', () => {
  it('close() leaves no TCP socket: connected peers see the 1001 SHUTTING_DOWN close', async () => {
    const extra = await publish(ref, { tcp: {}, streams: KvActor.streams });
    const kv = await connect<typeof KvActor>(extra.tcpUrl!, { reconnect: false });
    const idle = await tcp(extra.tcpPort!); // no preface yet
    const idleClosed = closedBy(idle);
    const peer = await helloPeer(extra.tcpPort!);
    const peerClosed = closedBy(peer);
    await kv.set('c', pack(1));
    const lost = kv.get('c').catch((e: HeaplessError) => e.code);
    await extra.close();
    expect(await lost).not.toBe(undefined); // answered before the close, or lost with it
    await idleClosed;
    expect(closeOf(await peerClosed)).toEqual({ code: 1001, reason: 'SHUTTING_DOWN' });
    // Nothing listens on the port any more.
    await expect(tcp(extra.tcpPort!)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await expect(kv.get('c')).rejects.toMatchObject({ code: expect.stringMatching(/CONNECTION_LOST|CLIENT_CLOSED/) });
    await kv.close();
  });

  it('a client reconnects after the server restarts on the same port', async () => {
    let s = await publish(ref, { tcp: {} });
    const port = s.tcpPort!;
    const kv = await connect<typeof KvActor>(s.tcpUrl!, { reconnect: { minDelayMs: 20, maxDelayMs: 100 } });
    await kv.set('r', pack('before'));
    await s.close();
    s = await publish(ref, { tcp: { port } });
    try {
      await until(
        async () => {
          try {
            return unpack((await kv.get('r'))!) === 'before';
          } catch {
            return false;
          }
        },
        'the client reconnected',
        20_000,
      );
    } finally {
      await kv.close();
      await s.close();
    }
  });

  it('a TCP host off loopback follows the insecure-bind rule', async () => {
    await expect(publish(ref, { tcp: { host: '0.0.0.0' } })).rejects.toMatchObject({
      code: 'HEAPLESS_ERR_ACTOR_INSECURE_BIND',
    });
    await expect(publish(ref, { token: 't', tcp: { host: '0.0.0.0' } })).rejects.toBeInstanceOf(ActorError);
  });
});

describe('TLS', () => {
  const dir = mkdtempSync(join(tmpdir(), 'heapless-tcp-tls-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('tls:// with the server certificate: the client trusts it through ca, and refuses it without', async () => {
    const { cert, key } = selfSigned(dir);
    const s = await publish(ref, { token: TOKEN, tls: { cert, key }, tcp: {} });
    try {
      expect(s.tcpUrl).toBe(`tls://127.0.0.1:${s.tcpPort}`);
      const kv = await connect<typeof KvActor>(s.tcpUrl!, { token: TOKEN, ca: cert });
      await kv.set('t', pack('secret'));
      expect(unpack((await kv.get('t'))!)).toBe('secret');
      await kv.close();
      const byName = await connect<typeof KvActor>(`tls://localhost:${s.tcpPort}`, { token: TOKEN, ca: cert });
      expect(await byName.has('t')).toBe(true);
      await byName.close();
      await expect(connect(s.tcpUrl!, { token: TOKEN })).rejects.toMatchObject({ code: 'CONNECT_FAILED' });
      // Clear text on the TLS port is no heapless preface to it: the TLS layer drops the connection.
      const plain = await tcp(s.tcpPort!);
      plain.write(encodePreface(TOKEN));
      await closedWithin(plain, 5000);
    } finally {
      await s.close();
    }
  });
});

describe('heapless serve --tcp-port', () => {
  it('serves the KV actor over TCP too, and logs its URL', async () => {
    const child = await startServe(['--memory', '--tcp-port', '0', '--log-level', 'info']);
    try {
      const listening = child.lines.find((l) => l.msg === 'listening')!;
      expect(listening.tcp).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/);
      const kv = await connect<typeof KvActor>(listening.tcp as string);
      await kv.set('cli', pack(1));
      expect(unpack((await kv.get('cli'))!)).toBe(1);
      await kv.close();
    } finally {
      child.proc.kill('SIGKILL');
      await child.exited;
    }
  });
});

describe('a TCP client', () => {
  it('a server that is not there: CONNECT_FAILED', async () => {
    const probe = netConnect({ host: '127.0.0.1', port: 1 });
    probe.on('error', () => {});
    probe.destroy();
    await expect(connect('tcp://127.0.0.1:1', { reconnect: false })).rejects.toBeInstanceOf(HeaplessError);
    await expect(connect('tcp://127.0.0.1:1')).rejects.toMatchObject({ code: 'CONNECT_FAILED' });
  });
});
