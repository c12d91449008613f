import { HeaplessError } from '@heapless/client/protocol';
import { describe, expect, it } from 'vitest';
import { ActorError } from '../errors.js';
import { Actor } from './actor.js';
import { handleOf } from './actor-handle.js';
import { detach } from './detach.js';
import { spawn } from './spawn.js';

class Log extends Actor {
  static override readonly exposed = ['append', 'slowAppend', 'fail', 'read'] as const;
  readonly items: string[] = [];
  stoppedWith: string[] | null = null;
  #open!: () => void;
  readonly #gate = new Promise<void>((r) => {
    this.#open = r;
  });

  append(s: string): number {
    this.items.push(s);
    return this.items.length;
  }
  async slowAppend(s: string): Promise<number> {
    await new Promise((r) => setTimeout(r, 5));
    this.items.push(s);
    return this.items.length;
  }
  /** Holds the mailbox until open() is called from outside (not through the mailbox). */
  block(): Promise<void> {
    return this.#gate;
  }
  open(): void {
    this.#open();
  }
  fail(msg: string): never {
    throw new HeaplessError('BAD_ARGUMENTS', msg);
  }
  read(): string[] {
    return [...this.items];
  }
  override onStop(): void {
    this.stoppedWith = [...this.items];
  }
}

describe('spawn', () => {
  it('runs messages one at a time in arrival order, async ones included', async () => {
    const ref = spawn(new Log());
    const results = await Promise.all([ref.slowAppend('a'), ref.append('b'), ref.slowAppend('c'), ref.append('d')]);
    expect(results).toEqual([1, 2, 3, 4]);
    expect(await ref.read()).toEqual(['a', 'b', 'c', 'd']);
    await ref.stop();
  });

  it('rejects only the call that threw', async () => {
    const ref = spawn(new Log());
    const [a, b, c] = await Promise.allSettled([ref.append('a'), ref.fail('nope'), ref.append('c')]);
    expect(a).toEqual({ status: 'fulfilled', value: 1 });
    expect(b.status === 'rejected' && (b.reason as HeaplessError).code).toBe('BAD_ARGUMENTS');
    expect(c).toEqual({ status: 'fulfilled', value: 2 });
    await ref.stop();
  });

  it("rejects with MAILBOX_FULL beyond the bound when overflow is 'reject'", async () => {
    const log = new Log();
    const ref = spawn(log, { mailbox: 2, overflow: 'reject' });
    const blocked = ref.block();
    const queued = ref.append('a'); // 2 in the mailbox: block (running) + a
    const over = ref.append('b');
    await expect(over).rejects.toMatchObject({ code: 'MAILBOX_FULL' });
    log.open();
    await blocked;
    expect(await queued).toBe(1);
    await ref.stop();
  });

  it("makes callers wait, in order, when overflow is 'wait'", async () => {
    const log = new Log();
    const ref = spawn(log, { mailbox: 2, overflow: 'wait' });
    const blocked = ref.block();
    const calls = ['a', 'b', 'c', 'd'].map((s) => ref.append(s));
    expect(handleOf(ref).load).toBe(5);
    log.open();
    await blocked;
    expect(await Promise.all(calls)).toEqual([1, 2, 3, 4]);
    await ref.stop();
  });

  it('stop({ drain: true }) runs what is queued, then onStop; later calls get ACTOR_STOPPED', async () => {
    const log = new Log();
    const ref = spawn(log);
    const calls = [ref.slowAppend('a'), ref.append('b')];
    await ref.stop({ drain: true });
    expect(await Promise.all(calls)).toEqual([1, 2]);
    expect(log.stoppedWith).toEqual(['a', 'b']);
    await expect(ref.append('c')).rejects.toMatchObject({ code: 'ACTOR_STOPPED' });
  });

  it('stop({ drain: false }) finishes the running call and rejects the queued ones', async () => {
    const log = new Log();
    const ref = spawn(log, { mailbox: 1, overflow: 'wait' });
    const running = ref.slowAppend('a');
    const queued = ref.append('b').catch((e: unknown) => e);
    await Promise.resolve(); // let the mailbox start 'a'
    await ref.stop({ drain: false });
    expect(await running).toBe(1);
    expect(await queued).toMatchObject({ code: 'ACTOR_STOPPED' });
    expect(log.stoppedWith).toEqual(['a']);
  });

  it('knows the exposed names and refuses a name that is not a method', () => {
    const ref = spawn(new Log());
    expect([...handleOf(ref).exposed]).toEqual(['append', 'slowAppend', 'fail', 'read']);
    expect(handleOf(ref).methods.has('block')).toBe(true);
    expect(() => spawn({ x: 1 }, { expose: ['x'] })).toThrow(ActorError);
    void ref.stop();
  });

  it('refuses to expose a name a client ref cannot call (reserved, or not a plain identifier)', () => {
    const actor = { toJSON: () => 1, nodeType: () => 1, $$typeof: () => 1, _hidden: () => 1, ok: () => 1 };
    for (const name of ['toJSON', 'nodeType', '$$typeof', '_hidden']) {
      expect(() => spawn(actor, { expose: [name] }), name).toThrow(
        expect.objectContaining({ code: 'HEAPLESS_ERR_ACTOR_NOT_A_METHOD' }),
      );
    }
    void spawn(actor, { expose: ['ok'] }).stop();
  });

  it('lets the mailbox move on past a detached reply, and stop() still waits for it', async () => {
    let release!: () => void;
    const pending = new Promise<string>((r) => {
      release = () => r('done');
    });
    const ref = spawn({ later: () => detach(pending), now: () => 'now' }, { expose: [] });
    const later = ref.later();
    expect(await ref.now()).toBe('now'); // would hang if the detached reply held the mailbox
    let stopped = false;
    const stopping = ref.stop().then(() => {
      stopped = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(false);
    release();
    expect(await later).toBe('done');
    await stopping;
  });

  it('runQueued runs the calls posted so far at once, in order, and never past a method holding the mailbox', async () => {
    const log = new Log();
    const ref = spawn(log);
    const handle = handleOf(ref);
    const got: [number, unknown][] = [];
    const sink = {
      resolve: (id: number, v: unknown) => got.push([id, v]),
      reject: (id: number, e: unknown) => got.push([id, e]),
    };
    handle.post('append', ['a'], sink, 1);
    handle.post('append', ['b'], sink, 2);
    handle.runQueued();
    expect(got).toEqual([
      [1, 1],
      [2, 2],
    ]); // answered before runQueued returned
    handle.post('block', [], sink, 3);
    handle.post('append', ['c'], sink, 4);
    handle.runQueued();
    handle.runQueued();
    expect(got.length).toBe(2); // block holds the mailbox: c waits
    expect(log.items).toEqual(['a', 'b']);
    log.open();
    expect(await ref.read()).toEqual(['a', 'b', 'c']);
    expect(got.slice(2)).toEqual([
      [3, undefined],
      [4, 3],
    ]);
    await ref.stop();
  });

  it('works for a plain object with an explicit expose list', async () => {
    let n = 0;
    const ref = spawn({ inc: () => ++n }, { expose: ['inc'] });
    expect(await ref.inc()).toBe(1);
    await ref.stop();
  });
});
