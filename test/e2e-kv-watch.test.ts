import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KvActor, type KvActorOptions, kvRoutes, type Published, publish, spawn } from '@heapless/actor';
import { connect, HeaplessError, type KvChange, type RemoteStream } from '@heapless/client';
import { FrameDecoder, FrameEncoder, PROTOCOL } from '@heapless/client/protocol';
import { OffHeapMap, type OffHeapMapOpenOptions } from '@heapless/offheap';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

const root = mkdtempSync(join(tmpdir(), 'e2e-kv-watch-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;

type Kv = Awaited<ReturnType<typeof connect<typeof KvActor>>>;

/** A KV server over a fresh persisted map, and a client of it; `close()` stops all of it. */
async function start(
  actor: KvActorOptions = {},
  mapOptions: Partial<OffHeapMapOpenOptions> = {},
): Promise<{ map: OffHeapMap<string, unknown>; server: Published; kv: Kv; close(): Promise<void> }> {
  const map = await OffHeapMap.open<string, unknown>({ dir: join(root, `d${dirs++}`), threads: 1, ...mapOptions });
  const ref = spawn(new KvActor(map, actor));
  const server = await publish(ref, { routes: kvRoutes, streams: KvActor.streams });
  const kv = await connect<typeof KvActor>(server.url);
  return {
    map,
    server,
    kv,
    async close() {
      await kv.close();
      await server.close();
      await ref.stop();
    },
  };
}

const hex = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString('hex'));

/** Takes changes from `w` until one of sequence `last` (or later) arrived; checks they ascend. */
async function takeThrough(w: RemoteStream<KvChange>, last: number, into: KvChange[] = []): Promise<KvChange[]> {
  let prev = into.length > 0 ? into[into.length - 1]![0] : -1;
  while (prev < last) {
    const r = await w.next();
    if (r.done) throw new Error('the watch ended');
    const c = r.value;
    expect(c[0]).toBeGreaterThan(prev);
    prev = c[0];
    into.push([c[0], c[1], c[2] === null ? null : Buffer.from(c[2])]);
  }
  return into;
}

/** `changes` applied to `base` (key → hex value). */
function replay(changes: KvChange[], base = new Map<string, string>()): Map<string, string> {
  const m = new Map(base);
  for (const [, key, value] of changes) {
    if (value === null) m.delete(key);
    else m.set(key, hex(value)!);
  }
  return m;
}

/** Every entry under `prefix`, by scan, as key → hex value. */
async function stored(kv: Kv, prefix: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let cursor: string | undefined;
  do {
    const page = await kv.scan({ prefix, cursor, limit: 1000 });
    for (const [k, v] of page.entries) out.set(k, hex(v)!);
    cursor = page.cursor ?? undefined;
  } while (cursor !== undefined);
  return out;
}

type Write = { t: 'set'; k: number; v: number } | { t: 'del'; k: number };
type Op = Write | { t: 'batch'; ops: Write[] };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ t: fc.constant('set' as const), k: fc.nat(30), v: fc.nat(1000) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('del' as const), k: fc.nat(30) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('batch' as const),
      ops: fc.array(
        fc.oneof(
          fc.record({ t: fc.constant('set' as const), k: fc.nat(30), v: fc.nat(1000) }),
          fc.record({ t: fc.constant('del' as const), k: fc.nat(30) }),
        ),
        { maxLength: 8 },
      ),
    }),
  },
);

describe('KV watch over the WebSocket', () => {
  it('replays, for a watcher from 0 and one joining midway, a stream that rebuilds the store, in commit order', async () => {
    const s = await start();
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(opArb, { maxLength: 12 }), { minLength: 2, maxLength: 8 }),
          async (rounds) => {
            const p = `r${run++}:`;
            const key = (k: number) => `${p}${k % 3 === 0 ? 'é' : ''}${k}`;
            const value = (v: number) => Buffer.from(`v${v}`.repeat(1 + (v % 4)));
            const model = new Map<string, string>();
            const apply = (op: Op) => {
              if (op.t === 'set') model.set(key(op.k), value(op.v).toString('hex'));
              else if (op.t === 'del') model.delete(key(op.k));
              else for (const o of op.ops) apply(o);
            };
            const fromZero = s.kv.watch(p, { fromSequence: 0 });
            const noise = s.kv.watch('other:'); // another prefix: sees nothing of these
            const joinAt = Math.floor(rounds.length / 2);
            let joiner: RemoteStream<KvChange> | null = null;
            let joinBase = new Map<string, string>();
            for (let r = 0; r < rounds.length; r++) {
              if (r === joinAt) {
                // The sequence the store has reached, known from a batch's answer; the model is the state at it.
                const { sequence } = await s.kv.batch([], { meta: { at: Buffer.from([r]) } });
                joiner = s.kv.watch(p, { fromSequence: sequence });
                joinBase = new Map(model);
              }
              // One round's writes are pipelined (one frame): the actor commits them in the order they were made.
              const calls: Promise<unknown>[] = [];
              for (const op of rounds[r]!) {
                apply(op);
                if (op.t === 'set') calls.push(s.kv.set(key(op.k), value(op.v)));
                else if (op.t === 'del') calls.push(s.kv.delete(key(op.k)));
                else
                  calls.push(
                    s.kv.batch(
                      op.ops.map((o) =>
                        o.t === 'set'
                          ? { type: 'set' as const, key: key(o.k), value: value(o.v) }
                          : { type: 'delete' as const, key: key(o.k) },
                      ),
                    ),
                  );
              }
              await Promise.all(calls);
            }
            const end = await s.kv.batch([{ type: 'set', key: `${p}end`, value: Buffer.from('.') }]);
            model.set(`${p}end`, '2e');
            const all = await takeThrough(fromZero, end.sequence!);
            const late = await takeThrough(joiner!, end.sequence!);
            for (const [, k] of all) expect(k.startsWith(p)).toBe(true);
            expect(replay(all)).toEqual(model);
            expect(replay(late, joinBase)).toEqual(model);
            // The joiner's changes are exactly the tail of the first watcher's: no gap, no duplicate.
            expect(late).toEqual(all.slice(all.length - late.length));
            expect(await stored(s.kv, p)).toEqual(model);
            await fromZero.return();
            await joiner!.return();
            await noise.return();
          },
        ),
        { numRuns: 12 },
      );
    } finally {
      await s.close();
    }
  });

  it('pushes only the keys under the prefix, by bytes of UTF-8', async () => {
    const s = await start();
    try {
      const w = s.kv.watch('ü:');
      const { sequence: start } = (await w.opened) as { sequence: number };
      await s.kv.set('ü', Buffer.from('1'));
      await s.kv.set('u:1', Buffer.from('2'));
      await s.kv.set('ü:1', Buffer.from('3'));
      await s.kv.set('ü;1', Buffer.from('4'));
      await s.kv.delete('ü:1');
      const last = await s.kv.setMany([['ü:2', Buffer.from('5')]]);
      const got = await takeThrough(w, last.sequence!);
      expect(got.map(([q, k, v]) => [q > start, k, hex(v)])).toEqual([
        [true, 'ü:1', '33'],
        [true, 'ü:1', null],
        [true, 'ü:2', '35'],
      ]);
      await w.return();
    } finally {
      await s.close();
    }
  });

  it('refuses bad arguments, a memory-only store and a sequence it no longer has, with typed errors', async () => {
    const s = await start({}, { engine: { writeBufferSize: 64 * 1024 } });
    try {
      const codeOf = async (w: RemoteStream<KvChange>) => {
        const e = await w.next().catch((err: unknown) => err);
        return (e as HeaplessError).code;
      };
      expect(await codeOf(s.kv.watch(42 as unknown as string))).toBe('BAD_ARGUMENTS');
      expect(await codeOf(s.kv.watch('a', { fromSequence: -1 }))).toBe('BAD_ARGUMENTS');
      expect(await codeOf(s.kv.watch('a', { fromSequence: 1.5 }))).toBe('BAD_ARGUMENTS');
      expect(await codeOf(s.kv.watch('a', 'x' as never))).toBe('BAD_ARGUMENTS');
      expect(await codeOf(s.kv.watch('\ud800'))).toBe('BAD_ARGUMENTS');
      expect(await codeOf(s.kv.watch('a', { fromSequence: 1e12 }))).toBe('SEQUENCE_GONE');
      // Enough writes that the early WALs are flushed into tables and deleted (no image pins them).
      const value = Buffer.alloc(1024, 7);
      for (let i = 0; i < 8; i++) {
        await s.kv.setMany(Array.from({ length: 100 }, (_, j) => [`k${i * 100 + j}`, value] as [string, Uint8Array]));
      }
      await s.map.flush();
      const gone = s.kv.watch('', { fromSequence: 0 });
      const e = (await gone.next().catch((err: unknown) => err)) as HeaplessError;
      expect(e).toBeInstanceOf(HeaplessError);
      expect(e.code).toBe('SEQUENCE_GONE');
      expect(e.message).toMatch(/no longer/);
      // The stream was never opened: nothing is left on the server.
      expect(await s.kv.size()).toBe(800);
    } finally {
      await s.close();
    }
    const map = new OffHeapMap<string, unknown>({ threads: 1 });
    const ref = spawn(new KvActor(map, { persistent: false }));
    const server = await publish(ref, { streams: KvActor.streams });
    const kv = await connect<typeof KvActor>(server.url);
    const e = (await kv
      .watch('')
      .next()
      .catch((err: unknown) => err)) as HeaplessError;
    expect(e.code).toBe('BAD_ARGUMENTS');
    await kv.close();
    await server.close();
    await ref.stop();
  });

  it('ends a watch a slow consumer leaves behind with WATCH_OVERFLOW; resuming from its last sequence loses nothing', async () => {
    const s = await start();
    try {
      const w = s.kv.watch('o:'); // the client keeps 10,000 changes not taken
      await w.opened;
      const n = 12_000;
      let last = 0;
      for (let i = 0; i < n; i += 1000) {
        const r = await s.kv.setMany(
          Array.from({ length: 1000 }, (_, j) => [`o:${String(i + j).padStart(6, '0')}`, Buffer.from([j & 0xff])]) as [
            string,
            Uint8Array,
          ][],
        );
        last = r.sequence!;
      }
      const got: KvChange[] = [];
      let end: unknown;
      for (;;) {
        const r = await w.next().catch((e: unknown) => {
          end = e;
          return null;
        });
        if (r === null || r.done) break;
        got.push(r.value);
      }
      expect((end as HeaplessError).code).toBe('WATCH_OVERFLOW');
      expect(got.length).toBeGreaterThan(0);
      expect(got.length).toBeLessThan(n);
      const resumed = s.kv.watch('o:', { fromSequence: got[got.length - 1]![0] });
      await takeThrough(resumed, last, got);
      expect(got.map((c) => c[1])).toEqual(Array.from({ length: n }, (_, i) => `o:${String(i).padStart(6, '0')}`));
      await resumed.return();
    } finally {
      await s.close();
    }
  });

  it('ends a watch whose socket does not drain with WATCH_OVERFLOW after what was sent; a resume has no gap', async () => {
    // A memtable larger than what is written: its WAL stays, so the resume can read back what the watcher missed.
    const s = await start({ maxWatchBytes: 64 * 1024 }, { engine: { writeBufferSize: 64 * 1024 * 1024 } });
    const encoder = new FrameEncoder();
    const decoder = new FrameDecoder();
    const raw = new WebSocket(s.server.url, [PROTOCOL]);
    const messages: unknown[][] = [];
    raw.on('message', (data: Buffer) => {
      for (const m of decoder.decodeReplies(new Uint8Array(data))) messages.push(m as unknown[]);
    });
    try {
      await new Promise((resolve) => raw.once('open', resolve));
      raw.send(encoder.encodeDetached([[1, 'watch', ['s:']]]));
      await expect.poll(() => messages.some((m) => m[0] === 1)).toBe(true);
      raw.pause(); // reads nothing more: the kernel's buffers fill, then the server's
      const value = Buffer.alloc(2048, 1);
      const n = 6000;
      let last = 0;
      for (let i = 0; i < n; i += 500) {
        const r = await s.kv.setMany(
          Array.from({ length: 500 }, (_, j) => [`s:${String(i + j).padStart(6, '0')}`, value]) as [
            string,
            Uint8Array,
          ][],
        );
        last = r.sequence!;
      }
      raw.resume();
      await expect.poll(() => messages.some((m) => m[0] === 0 && m.length === 4), { timeout: 20_000 }).toBe(true);
      const end = messages.find((m) => m[0] === 0 && m.length === 4)!;
      expect(end[2]).toBe(411); // WATCH_OVERFLOW
      const items = messages.filter((m) => m[0] === 0 && m.length === 3).flatMap((m) => m[2] as KvChange[]);
      expect(items.length).toBeGreaterThan(0);
      expect(items.length).toBeLessThan(n);
      // Nothing of the stream comes after its end.
      expect(messages.indexOf(end)).toBe(messages.length - 1);
      const got = items.map((c) => [c[0], c[1], null] as KvChange);
      const resumed = s.kv.watch('s:', { fromSequence: got[got.length - 1]![0] });
      await takeThrough(resumed, last, got);
      expect(got.map((c) => c[1])).toEqual(Array.from({ length: n }, (_, i) => `s:${String(i).padStart(6, '0')}`));
      // The overflow ended the only watch while the hub was handing it a round: live changes still flow after it.
      const after = await s.kv.setMany([['s:after', value]]);
      await takeThrough(resumed, after.sequence!, got);
      expect(got[got.length - 1]![1]).toBe('s:after');
      await resumed.return();
    } finally {
      raw.terminate();
      await s.close();
    }
  });

  it('resumes watchers that overflowed from the changes it keeps in memory, after their WALs are gone', async () => {
    // Small memtables: the writes below flush many times, and each flush deletes the WAL it covered.
    const run = async (watchLingerMs: number) => {
      const s = await start({ watchLingerMs }, { engine: { writeBufferSize: 64 * 1024 } });
      try {
        const watchers = [s.kv.watch('o:'), s.kv.watch('')]; // neither takes anything: both overflow
        await Promise.all(watchers.map((w) => w.opened));
        const n = 12_000;
        let last = 0;
        for (let i = 0; i < n; i += 1000) {
          const entries = Array.from({ length: 1000 }, (_, j) => [
            `o:${String(i + j).padStart(6, '0')}`,
            Buffer.from('v'),
          ]);
          last = (await s.kv.setMany(entries as [string, Uint8Array][])).sequence!;
        }
        // The memtable flushed, a write in the next log, and an image there: the map's WAL pin moves past the log
        // that held the watchers' changes, which is deleted.
        await engineOf(s.map).flush();
        await s.kv.set('p:after', Buffer.from('x'));
        expect(await s.map.writeImage()).toBe(true);
        const got: KvChange[][] = [];
        for (const w of watchers) {
          const mine: KvChange[] = [];
          const end = await (async () => {
            for (;;) {
              const r = await w.next();
              if (r.done) return null;
              mine.push(r.value);
            }
          })().catch((e: unknown) => e);
          expect((end as HeaplessError).code).toBe('WATCH_OVERFLOW');
          got.push(mine);
        }
        // Both watches ended: the store now has no watch, and the WAL holding their last changes is gone.
        const resumed = ['o:', ''].map((prefix, i) =>
          s.kv.watch(prefix, { fromSequence: got[i]![got[i]!.length - 1]![0] }),
        );
        for (let i = 0; i < 2; i++) await takeThrough(resumed[i]!, last, got[i]);
        for (const mine of got) {
          expect(mine.map((c) => c[1])).toEqual(Array.from({ length: n }, (_, k) => `o:${String(k).padStart(6, '0')}`));
        }
        await Promise.all(resumed.map((w) => w.return()));
        return 'resumed';
      } catch (e) {
        return (e as HeaplessError).code ?? String(e);
      } finally {
        await s.close();
      }
    };
    expect(await run(60_000)).toBe('resumed');
    // Without the linger the store stopped listening when the last watch ended: only the WALs could answer, and
    // they are gone. What the backlog saves.
    expect(await run(0)).toBe('SEQUENCE_GONE');
  });

  it('leaves no watch behind when the watcher returns, cancels, or disconnects', async () => {
    const s = await start({ watchLingerMs: 100 }); // the store listens on that long after the last watch
    try {
      const a = s.kv.watch('x');
      await a.opened;
      expect(watchesOf(s.map)).toBe(1);
      await a.return();
      await expect.poll(() => watchesOf(s.map)).toBe(0);
      const other = await connect<typeof KvActor>(s.server.url);
      const b = other.watch('y', { fromSequence: 0 });
      await b.opened;
      expect(watchesOf(s.map)).toBe(1);
      await other.close(); // the socket goes: the server cancels its streams
      await expect.poll(() => watchesOf(s.map)).toBe(0);
      expect((await b.next().catch((e: unknown) => e)) as HeaplessError).toMatchObject({ code: 'CLIENT_CLOSED' });
    } finally {
      await s.close();
    }
  });

  it('refuses a watch beyond maxWatches over every connection, and takes one again once another ends', async () => {
    const s = await start({ maxWatches: 2 });
    const other = await connect<typeof KvActor>(s.server.url);
    try {
      const a = s.kv.watch('a');
      const b = other.watch('b');
      await Promise.all([a.opened, b.opened]);
      const c = other.watch('c');
      expect((await c.next().catch((e: unknown) => e)) as HeaplessError).toMatchObject({ code: 'TOO_MANY_STREAMS' });
      await a.return();
      await expect.poll(() => watchesOf(s.map)).toBe(1);
      const d = s.kv.watch('d');
      await d.opened;
      await s.kv.set('d1', Buffer.from('1'));
      expect((await d.next()).value?.[1]).toBe('d1');
      await d.return();
      await b.return();
    } finally {
      await other.close();
      await s.close();
    }
  });

  it('ends open watches with SHUTTING_DOWN when the server closes, and the close completes', async () => {
    const s = await start();
    const w = s.kv.watch('', { fromSequence: 0 });
    await w.opened;
    const client = s.kv;
    await s.server.close();
    const e = (await (async () => {
      try {
        for await (const _ of w) {
          // the history of the few writes there were
        }
      } catch (err) {
        return err;
      }
    })()) as HeaplessError;
    expect(e.code).toBe('SHUTTING_DOWN');
    await client.close();
    await s.close();
    expect(watchesOf(s.map)).toBe(0);
  });
});

/** Followers of the map's engine commit feed: 0 once no watch is open. */
/** The map's engine (internal: the tests look at its followers and flush its memtable). */
function engineOf(map: OffHeapMap<string, unknown>): {
  writes: { feed: { size: number } };
  flush(): Promise<void>;
} {
  return (map as unknown as { parts: { persistence: { engine: ReturnType<typeof engineOf> } } }).parts.persistence
    .engine;
}

function watchesOf(map: OffHeapMap<string, unknown>): number {
  return engineOf(map).writes.feed.size;
}

describe('KV watch taken in batches', () => {
  it('gives, through batches(), the same changes in the same order as the writes, and rebuilds the store', async () => {
    const s = await start();
    try {
      const w = s.kv.watch('b:');
      const head = (await w.opened) as { sequence: number };
      const model = new Map<string, string>();
      const writes: Promise<unknown>[] = [];
      let changes = 0; // a delete of a key not there changes nothing and is not pushed
      for (let i = 0; i < 3000; i++) {
        const k = `b:${i % 97}`;
        if (model.has(k) || i % 11 !== 0) changes++;
        if (i % 11 === 0) {
          model.delete(k);
          writes.push(s.kv.delete(k));
        } else {
          const v = Buffer.from(`v${i}`);
          model.set(k, hex(v)!);
          writes.push(s.kv.set(k, v));
        }
      }
      await s.kv.set('other', Buffer.from('not under the prefix'));
      await Promise.all(writes);
      const last = s.map.changes!.lastSequence;
      const got: KvChange[] = [];
      let batches = 0;
      for await (const batch of w.batches()) {
        batches++;
        for (const c of batch) got.push([c[0], c[1], c[2] === null ? null : Buffer.from(c[2])]);
        if (got[got.length - 1]![0] >= last - 1) break; // the last write is 'other', not under the prefix
      }
      expect(got.length).toBe(changes);
      expect(batches).toBeLessThan(changes / 10); // items that came together were taken together
      for (let i = 1; i < got.length; i++) expect(got[i]![0]).toBeGreaterThan(got[i - 1]![0]);
      expect(got[0]![0]).toBeGreaterThan(head.sequence);
      expect(replay(got)).toEqual(model);
      expect(await stored(s.kv, 'b:')).toEqual(model);
    } finally {
      await s.close();
    }
  });
});
