import { handleOf, publish, spawnInWorker } from '@heapless/actor';
import { connect } from '@heapless/client';
import { describe, expect, it } from 'vitest';

// The worker imports the actor's module by URL; a data: URL keeps the fixture in this file. Plain JS, no imports.
const source = `
export class Counter {
  static exposed = ['add', 'get', 'slowAdd', 'fail', 'threadId'];
  constructor(start) { this.n = start; }
  add(d) { this.n += d; return this.n; }
  get() { return this.n; }
  async slowAdd(d, ms) { await new Promise((r) => setTimeout(r, ms)); this.n += d; return this.n; }
  fail(msg) { const e = new Error(msg); e.code = 'BAD_ARGUMENTS'; throw e; }
  async threadId() { return (await import('node:worker_threads')).threadId; }
  onStop() { globalThis.stopped = true; }
}
export const notAClass = 42;
`;
const url = `data:text/javascript,${encodeURIComponent(source)}`;

interface CounterApi {
  add(d: number): number;
  get(): number;
  slowAdd(d: number, ms: number): Promise<number>;
  fail(msg: string): never;
  threadId(): Promise<number>;
}
type Counter = abstract new (start: number) => CounterApi;

describe('spawnInWorker', () => {
  it('runs the actor in another thread, one message at a time, in order', async () => {
    const ref = await spawnInWorker<Counter>(url, 'Counter', [10]);
    expect(await ref.threadId()).not.toBe(0);
    const r = await Promise.all([ref.slowAdd(1, 20), ref.add(2), ref.slowAdd(3, 5), ref.get()]);
    expect(r).toEqual([11, 13, 16, 16]);
    await ref.stop();
  });

  it('rejects only the failing call, keeping its heapless code', async () => {
    const ref = await spawnInWorker<Counter>(url, 'Counter', [0]);
    const [a, b, c] = await Promise.allSettled([ref.add(1), ref.fail('bad'), ref.add(1)]);
    expect(a).toMatchObject({ status: 'fulfilled', value: 1 });
    expect(b).toMatchObject({ status: 'rejected', reason: { code: 'BAD_ARGUMENTS', message: 'bad' } });
    expect(c).toMatchObject({ status: 'fulfilled', value: 2 });
    await ref.stop();
  });

  it('bounds its mailbox: MAILBOX_FULL with reject, waiting callers with wait', async () => {
    const rejecting = await spawnInWorker<Counter>(url, 'Counter', [0], { mailbox: 2, overflow: 'reject' });
    const r = await Promise.allSettled([rejecting.slowAdd(1, 30), rejecting.add(1), rejecting.add(1)]);
    expect(r.map((x) => x.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect((r[2] as PromiseRejectedResult).reason).toMatchObject({ code: 'MAILBOX_FULL' });
    await rejecting.stop();

    const waiting = await spawnInWorker<Counter>(url, 'Counter', [0], { mailbox: 2, overflow: 'wait' });
    const calls = [waiting.slowAdd(1, 30), ...Array.from({ length: 6 }, () => waiting.add(1))];
    expect(handleOf(waiting).load).toBe(7);
    expect(await Promise.all(calls)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    await waiting.stop();
  });

  it('stop({ drain: false }) rejects what is queued; later calls get ACTOR_STOPPED; the worker ends', async () => {
    const ref = await spawnInWorker<Counter>(url, 'Counter', [0], { mailbox: 1, overflow: 'wait' });
    const running = ref.slowAdd(1, 30);
    const queued = ref.add(1).catch((e: unknown) => e);
    await ref.stop({ drain: false });
    expect(await running).toBe(1);
    expect(await queued).toMatchObject({ code: 'ACTOR_STOPPED' });
    await expect(ref.get()).rejects.toMatchObject({ code: 'ACTOR_STOPPED' });
  });

  it('stop() drains by default and leaves no worker behind', async () => {
    const workers = () => process.getActiveResourcesInfo().filter((r) => r === 'MessagePort' || r === 'Worker').length;
    const before = workers();
    const ref = await spawnInWorker<Counter>(url, 'Counter', [0]);
    expect(workers()).toBeGreaterThan(before);
    const calls = [ref.slowAdd(1, 20), ref.add(1), ref.add(1)];
    await ref.stop();
    expect(await Promise.all(calls)).toEqual([1, 2, 3]);
    expect(workers()).toBe(before);
  });

  it('fails to start with HEAPLESS_ERR_ACTOR_WORKER_START for a missing or non-class export', async () => {
    await expect(spawnInWorker(url, 'Nope')).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ACTOR_WORKER_START' });
    await expect(spawnInWorker(url, 'notAClass')).rejects.toMatchObject({ code: 'HEAPLESS_ERR_ACTOR_WORKER_START' });
  });

  it('can be published like a local actor', async () => {
    const ref = await spawnInWorker<Counter>(url, 'Counter', [100]);
    const server = await publish(ref);
    const c = await connect<Counter>(server.url);
    expect(await Promise.all([c.add(1), c.add(2), c.get()])).toEqual([101, 103, 103]);
    await c.close();
    await server.close();
    await ref.stop();
  });
});
