import { Actor, handleOf, type Published, publish, spawn } from '@heapless/actor';
import { connect, HeaplessError, httpClient } from '@heapless/client';
import { pack, unpack } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';

class Journal extends Actor {
  static override readonly exposed = [
    'append',
    'entries',
    'size',
    'sleep',
    'store',
    'load',
    'isView',
    'add',
    'huge',
  ] as const;
  readonly #byClient = new Map<number, number[]>();
  readonly #blobs = new Map<string, Uint8Array>();
  #size = 0;

  append(client: number, seq: number): number {
    let list = this.#byClient.get(client);
    if (list === undefined) this.#byClient.set(client, (list = []));
    list.push(seq);
    return ++this.#size;
  }
  entries(client: number): number[] {
    return this.#byClient.get(client) ?? [];
  }
  size(): number {
    return this.#size;
  }
  async sleep(ms: number): Promise<string> {
    await new Promise((r) => setTimeout(r, ms));
    return 'awake';
  }
  /** Keeps the bytes as received (values travel as bin; the server does not decode them). */
  store(key: string, value: Uint8Array): void {
    this.#blobs.set(key, Uint8Array.prototype.slice.call(value));
  }
  load(key: string): Uint8Array | undefined {
    return this.#blobs.get(key);
  }
  /** Whether `value` is a view into a larger buffer (the received frame) rather than a copy. */
  isView(value: Uint8Array): boolean {
    return value.buffer.byteLength > value.byteLength;
  }
  add(a: number, b: number): number {
    if (typeof a !== 'number' || typeof b !== 'number') {
      throw new HeaplessError('BAD_ARGUMENTS', `add(a: number, b: number), got ${typeof a}, ${typeof b}`);
    }
    return a + b;
  }
  /** A result msgpack cannot carry. */
  huge(): bigint {
    return 2n ** 70n;
  }
  /** Not exposed: remote callers must not reach it. */
  reset(): void {
    this.#size = 0;
  }
}

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function serve(opts: Parameters<typeof publish>[1] = {}): Promise<Published> {
  const ref = spawn(new Journal());
  const server = await publish(ref, opts);
  open.push({
    close: async () => {
      await server.close();
      await ref.stop();
    },
  });
  return server;
}

describe('WebSocket end to end', () => {
  it('serves many clients at once, each seeing its calls answered in order', async () => {
    const server = await serve();
    const clients = await Promise.all(Array.from({ length: 12 }, () => connect<typeof Journal>(server.url)));
    open.push(...clients);
    const perClient = 300;
    await Promise.all(
      clients.map(async (c, i) => {
        const sizes = await Promise.all(Array.from({ length: perClient }, (_, seq) => c.append(i, seq)));
        // The actor's running count only grows along one client's calls: its calls ran in the order sent.
        for (let k = 1; k < sizes.length; k++) expect(sizes[k]).toBeGreaterThan(sizes[k - 1]);
      }),
    );
    for (let i = 0; i < clients.length; i++) {
      expect(await clients[i].entries(i)).toEqual(Array.from({ length: perClient }, (_, s) => s));
    }
    expect(await clients[0].size()).toBe(clients.length * perClient);
  });

  it('carries bytes as msgpack bin: the actor gets a view of the frame, the client gets the same bytes back', async () => {
    const server = await serve();
    const c = await connect<typeof Journal>(server.url);
    open.push(c);
    const value = pack({ name: 'ada', friends: [1, 2, 3] });
    await c.store('u:1', value);
    expect(await c.isView(value)).toBe(true);
    const back = await c.load('u:1');
    expect(back).toBeInstanceOf(Uint8Array);
    expect(unpack(back!)).toEqual({ name: 'ada', friends: [1, 2, 3] });
  });

  it('answers unknown, non-public and badly typed calls with typed errors, and goes on serving', async () => {
    const server = await serve();
    const c = await connect<typeof Journal>(server.url);
    open.push(c);
    const raw = c as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    // The hello lists the exposed methods: the ref offers nothing else, so no call leaves for these names.
    expect(raw.nope).toBeUndefined();
    expect(raw.reset).toBeUndefined();
    await expect(raw.add('1', 2)).rejects.toMatchObject({ code: 'BAD_ARGUMENTS', wire: 301 });
    // Over HTTP (no hello) any method-like name is a call, and the server answers UNKNOWN_METHOD.
    const http = httpClient<typeof Journal>(server.httpUrl) as unknown as typeof raw;
    await expect(http.nope()).rejects.toMatchObject({ code: 'UNKNOWN_METHOD', wire: 102 });
    await expect(http.reset()).rejects.toMatchObject({ code: 'UNKNOWN_METHOD' });
    expect(await c.add(1, 2)).toBe(3);
  });

  it('fails only the call whose arguments or result cannot be encoded', async () => {
    const server = await serve();
    const c = await connect<typeof Journal>(server.url);
    open.push(c);
    const [bad, good, result] = await Promise.allSettled([
      c.add((2n ** 70n) as unknown as number, 1),
      c.add(1, 1),
      c.huge(),
    ]);
    expect(bad).toMatchObject({ status: 'rejected', reason: { code: 'BAD_ARGUMENTS' } });
    expect(good).toEqual({ status: 'fulfilled', value: 2 });
    expect(result).toMatchObject({ status: 'rejected', reason: { code: 'ACTOR_ERROR' } });
    expect(await c.add(2, 3)).toBe(5);
  });

  it('times a call out on its own and keeps the connection', async () => {
    const server = await serve();
    const c = await connect<typeof Journal>(server.url, { timeoutMs: 100 });
    open.push(c);
    const err = await c.sleep(400).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HeaplessError);
    expect((err as HeaplessError).code).toBe('TIMEOUT');
    // The actor is still sleeping; the next call queues behind it and is answered.
    const c2 = await connect<typeof Journal>(server.url, { timeoutMs: 10_000 });
    open.push(c2);
    expect(await c2.add(2, 2)).toBe(4);
  });

  it('reconnects after the server restarts on the same port', async () => {
    const ref = spawn(new Journal());
    open.push({ close: () => ref.stop() });
    let server = await publish(ref);
    const c = await connect<typeof Journal>(server.url, { reconnect: { minDelayMs: 10, maxDelayMs: 200 } });
    open.push(c);
    expect(await c.append(1, 1)).toBe(1);
    await server.close();
    server = await publish(ref, { port: server.port });
    open.push(server);
    // Made while the client is reconnecting: sent once it has reconnected.
    expect(await c.append(1, 2)).toBe(2);
    expect(await c.entries(1)).toEqual([1, 2]);
  });

  it('fails to connect with CONNECT_FAILED on a wrong path', async () => {
    const server = await serve();
    const wrong = server.url.replace('/v1/ws', '/nope');
    await expect(connect<typeof Journal>(wrong)).rejects.toMatchObject({ code: 'CONNECT_FAILED' });
  });

  it('rejects with EADDRINUSE for a port in use, leaving nothing open', async () => {
    const server = await serve();
    const ref = spawn(new Journal());
    await expect(publish(ref, { port: server.port })).rejects.toMatchObject({ code: 'EADDRINUSE' });
    await ref.stop();
  });

  it('rejects calls in flight with CONNECTION_LOST when the connection drops', async () => {
    // A server that says hello, then drops the connection when the first frame arrives.
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((r) => wss.once('listening', r));
    wss.on('connection', (ws) => {
      ws.send(pack([[0, { v: 1, maxFrameBytes: 1 << 20, maxCallsPerFrame: 100, maxInFlight: 100 }]]));
      ws.once('message', () => ws.terminate());
    });
    open.push({ close: () => new Promise((r) => wss.close(() => r())) });
    const { port } = wss.address() as { port: number };
    const c = await connect<typeof Journal>(`ws://127.0.0.1:${port}`, { reconnect: false });
    open.push(c);
    const err = await c.size().catch((e: unknown) => e);
    expect((err as HeaplessError).code).toBe('CONNECTION_LOST');
    await expect(c.size()).rejects.toMatchObject({ code: 'CLIENT_CLOSED' });
  });

  it('stops for good when a server it reconnects to refuses its protocol version (1002 UNSUPPORTED_PROTOCOL)', async () => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((r) => wss.once('listening', r));
    let connections = 0;
    wss.on('connection', (ws) => {
      // First a v1 server that drops the connection at the first call, then one that refuses v1 clients.
      if (++connections > 1) {
        ws.close(1002, 'UNSUPPORTED_PROTOCOL');
        return;
      }
      ws.send(pack([[0, { v: 1, maxFrameBytes: 1 << 20, maxCallsPerFrame: 100, maxInFlight: 100 }]]));
      ws.once('message', () => ws.terminate());
    });
    open.push({ close: () => new Promise((r) => wss.close(() => r())) });
    const { port } = wss.address() as { port: number };
    const c = await connect<typeof Journal>(`ws://127.0.0.1:${port}`, { reconnect: { minDelayMs: 1, maxDelayMs: 5 } });
    open.push(c);
    expect((await c.size().catch((e: unknown) => e)) as HeaplessError).toMatchObject({ code: 'CONNECTION_LOST' });
    const waiting = c.size(); // waits for the reconnect, which the new server refuses
    await expect(waiting).rejects.toMatchObject({ code: 'UNSUPPORTED_PROTOCOL', closeCode: 1002 });
    await expect(c.size()).rejects.toMatchObject({ code: 'CLIENT_CLOSED' });
    expect(connections).toBe(2);
  });

  it('finishes calls in flight when the server closes, then closes the socket with 1001', async () => {
    const ref = spawn(new Journal());
    open.push({ close: () => ref.stop() });
    const server = await publish(ref);
    const c = await connect<typeof Journal>(server.url, { reconnect: false });
    open.push(c);
    const slow = c.sleep(100);
    await waitFor(() => handleOf(ref).load > 0); // the call has reached the actor
    await server.close();
    expect(await slow).toBe('awake');
    await expect(c.size()).rejects.toMatchObject({ code: 'CLIENT_CLOSED' });
  });

  it('sends the calls of one tick in one frame, split by the maxCallsPerFrame of the hello', async () => {
    // A server that records the frames it gets and answers every call with its id.
    const frames: number[][] = [];
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((r) => wss.once('listening', r));
    wss.on('connection', (ws) => {
      ws.send(pack([[0, { v: 1, maxFrameBytes: 1 << 20, maxCallsPerFrame: 20, maxInFlight: 100 }]]));
      ws.on('message', (data) => {
        const calls = unpack(data as Buffer) as [number, string, unknown[]][];
        frames.push(calls.map((m) => m[0]));
        ws.send(pack(calls.map((m) => [m[0], m[0]])));
      });
    });
    open.push({ close: () => new Promise((r) => wss.close(() => r())) });
    const { port } = wss.address() as { port: number };
    const c = await connect<typeof Journal>(`ws://127.0.0.1:${port}`);
    open.push(c);
    const ids = await Promise.all(Array.from({ length: 50 }, () => c.size()));
    expect(frames.map((f) => f.length)).toEqual([20, 20, 10]);
    expect(ids).toEqual(frames.flat());
    frames.length = 0;
    await Promise.all([c.size(), c.size()]);
    await c.size();
    expect(frames.map((f) => f.length)).toEqual([2, 1]);
  });

  it('leaves no socket or timer behind after close', async () => {
    // The earlier tests' servers and sockets may still be on their way out (a closed handle leaves the list a turn
    // or so later; a WebSocket's close timer ends with its socket): the baseline is taken once they are gone.
    await waitFor(() => LEFTOVERS.every((kind) => !(kind in resourceCounts())));
    const before = resourceCounts();
    const server = await serve();
    const c = await connect<typeof Journal>(server.url, { timeoutMs: 1000 });
    await c.append(1, 1);
    await c.close();
    await open.pop()!.close();
    await waitFor(() => sameCounts(resourceCounts(), before));
    expect(resourceCounts()).toEqual(before);
  });

  it('serves the same actor over HTTP with the same types', async () => {
    const server = await serve();
    const h = httpClient<typeof Journal>(server.httpUrl);
    expect(await h.add(20, 22)).toBe(42);
    const bytes = new Uint8Array([1, 2, 3]);
    await h.store('b', bytes);
    expect([...((await h.load('b')) as Uint8Array)]).toEqual([1, 2, 3]);
    await expect(h.add('x' as unknown as number, 1)).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
    const res = await fetch(`${server.httpUrl}/v1/call/add`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '[1, 2]',
    });
    expect(await res.json()).toBe(3);
    const impatient = httpClient<typeof Journal>(server.httpUrl, { timeoutMs: 50 });
    await expect(impatient.sleep(400)).rejects.toMatchObject({ code: 'TIMEOUT' });
    await impatient.close();
    await expect(impatient.size()).rejects.toMatchObject({ code: 'CLIENT_CLOSED' });
  });
});

/** Resources of a server or client: none is open between tests once everything of theirs has closed. */
const LEFTOVERS = ['TCPServerWrap', 'TCPSocketWrap', 'Timeout'];
function resourceCounts(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) if (r !== 'FSReqCallback') counts[r] = (counts[r] ?? 0) + 1;
  return counts;
}
function sameCounts(a: Record<string, number>, b: Record<string, number>): boolean {
  return JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
}
async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
}
