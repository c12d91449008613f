import { HeaplessError } from '@heapless/client/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ActorError } from '../errors.js';
import { detach } from './detach.js';
import { Mailbox } from './mailbox.js';
import { methodTable } from './method-table.js';
import type { ReplySink } from './reply-sink.js';

/** Lets queued microtasks and one round of immediates run (the mailbox schedules itself on both). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A sink that records every outcome by id, and the ids told `ran`. */
class RecordingSink implements ReplySink {
  readonly resolved = new Map<number, unknown>();
  readonly rejected = new Map<number, string>();
  readonly ranIds: number[] = [];
  resolve(id: number, value: unknown): void {
    this.resolved.set(id, value);
  }
  reject(id: number, error: unknown): void {
    this.rejected.set(id, error instanceof HeaplessError ? error.code : String(error));
  }
  ran(id: number): void {
    this.ranIds.push(id);
  }
}

/** An actor whose `hold` calls stay running until the test releases them, oldest first. */
class Worker {
  readonly started: number[] = [];
  readonly held: (() => void)[] = [];
  inc(id: number): number {
    this.started.push(id);
    return id;
  }
  hold(id: number): Promise<number> {
    this.started.push(id);
    return new Promise((resolve) => this.held.push(() => resolve(id)));
  }
  fail(): never {
    throw new Error('boom');
  }
  later(id: number): Promise<number> {
    return detach(Promise.resolve(id));
  }
}

function mailboxOf(w: Worker, opts: ConstructorParameters<typeof Mailbox>[3] = {}): Mailbox {
  const table = methodTable(w);
  return new Mailbox(w, table, new Set(table.keys()), opts);
}

/**
 * The model: calls accepted while the mailbox has room run in arrival order, one at a time, a `hold` keeping the
 * mailbox until released; beyond `capacity` (queued + running), `wait` keeps them in order, `reject` refuses them.
 */
class Model {
  readonly queue: { id: number; hold: boolean }[] = [];
  readonly waiting: { id: number; hold: boolean }[] = [];
  readonly started: number[] = [];
  readonly rejected: number[] = [];
  holding = 0;
  constructor(
    readonly capacity: number,
    readonly overflow: 'wait' | 'reject',
  ) {}
  get load(): number {
    return this.queue.length + this.holding + this.waiting.length;
  }
  post(id: number, hold: boolean): void {
    if (this.queue.length + this.holding < this.capacity && this.waiting.length === 0) this.queue.push({ id, hold });
    else if (this.overflow === 'wait') this.waiting.push({ id, hold });
    else this.rejected.push(id);
  }
  run(): void {
    while (this.holding === 0) {
      let c = this.queue.shift();
      if (c === undefined) {
        c = this.waiting.shift(); // the only slot was the call that finished (capacity 1)
        if (c === undefined) break;
      } else {
        const w = this.waiting.shift();
        if (w !== undefined) this.queue.push(w);
      }
      this.started.push(c.id);
      if (c.hold) this.holding = 1;
    }
  }
  release(): void {
    if (this.holding === 0) return;
    this.holding = 0;
    this.run();
  }
}

describe('Mailbox', () => {
  it('runs, queues, makes wait and refuses calls as the model does (property)', async () => {
    const step = fc.oneof(
      fc.array(fc.boolean(), { minLength: 1, maxLength: 6 }).map((holds) => ({ posts: holds })),
      fc.constant({ release: true as const }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom('wait' as const, 'reject' as const),
        fc.array(step, { maxLength: 20 }),
        async (capacity, overflow, steps) => {
          const w = new Worker();
          const box = mailboxOf(w, { mailbox: capacity, overflow });
          const model = new Model(capacity, overflow);
          const rec = new RecordingSink();
          let next = 1;
          for (const s of steps) {
            if ('posts' in s) {
              // Posted in one turn: the mailbox decides on room before any of them runs.
              for (const hold of s.posts) {
                const id = next++;
                box.post(hold ? 'hold' : 'inc', [id], rec, id);
                model.post(id, hold);
              }
              model.run();
            } else {
              w.held.shift()?.();
              model.release();
            }
            await settle();
            expect(w.started).toEqual(model.started);
            expect([...rec.rejected.keys()]).toEqual(model.rejected);
            expect([...rec.rejected.values()].every((c) => c === 'MAILBOX_FULL')).toBe(true);
            expect(box.load).toBe(model.load);
          }
          // Everything accepted is answered once the holds are released, in the order it ran.
          for (let f = w.held.shift(); f !== undefined; f = w.held.shift()) {
            f();
            await settle();
          }
          expect([...rec.resolved.keys()]).toEqual(w.started);
          expect(rec.resolved.size + rec.rejected.size).toBe(next - 1);
          await box.stop();
        },
      ),
      { numRuns: 200 },
    );
  });

  it('with room for one call, runs a waiting call once an async method gives the slot back (it used to hang)', async () => {
    const w = new Worker();
    const box = mailboxOf(w, { mailbox: 1, overflow: 'wait' });
    const rec = new RecordingSink();
    box.post('hold', [1], rec, 1);
    await settle();
    box.post('inc', [2], rec, 2);
    box.post('inc', [3], rec, 3);
    expect(box.load).toBe(3);
    w.held.shift()!();
    await settle();
    expect([...rec.resolved.keys()]).toEqual([1, 2, 3]);
    await box.stop(); // resolves: nothing is left waiting
  });

  it('yields to I/O after 1024 messages in one turn, so a busy actor cannot starve its sockets', async () => {
    const log: string[] = [];
    const box = mailboxOf(
      Object.assign(new Worker(), {
        inc(id: number) {
          log.push(String(id));
          return id;
        },
      }),
    );
    const rec = new RecordingSink();
    setImmediate(() => log.push('io'));
    for (let i = 0; i < 3000; i++) box.post('inc', [i], rec, i);
    while (rec.resolved.size < 3000) await settle();
    expect(log.indexOf('io')).toBe(1024);
    await box.stop();
  });

  it('tells the sink a call ran when its method returned a promise, and answers it later', async () => {
    const w = new Worker();
    const box = mailboxOf(w);
    const rec = new RecordingSink();
    box.post('inc', [1], rec, 1);
    box.post('hold', [2], rec, 2);
    box.post('later', [3], rec, 3);
    box.runQueued(); // runs 1 and starts 2 now, in this turn
    expect(rec.ranIds).toEqual([2]);
    expect([...rec.resolved.keys()]).toEqual([1]);
    w.held.shift()!();
    await settle();
    expect(rec.ranIds).toEqual([2, 3]); // detached: ran, then answered when its promise settles
    expect([...rec.resolved.entries()]).toEqual([
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
    await box.stop();
  });

  it('reports every finished call to its observer; refuses unknown methods and calls after stop', async () => {
    const seen: [string, boolean][] = [];
    const box = mailboxOf(new Worker(), {
      observer: {
        observe: (method, seconds, ok) => {
          expect(seconds).toBeGreaterThanOrEqual(0);
          seen.push([method, ok]);
        },
      },
    });
    const rec = new RecordingSink();
    box.post('inc', [1], rec, 1);
    box.post('fail', [], rec, 2);
    box.post('nope', [], rec, 3);
    await settle();
    expect(seen).toEqual([
      ['inc', true],
      ['fail', false],
    ]);
    expect([...rec.rejected.entries()]).toEqual([
      [3, 'UNKNOWN_METHOD'],
      [2, 'Error: boom'],
    ]);
    await box.stop();
    box.post('inc', [4], rec, 4);
    expect(rec.rejected.get(4)).toBe('ACTOR_STOPPED');
  });

  it('refuses a mailbox size or overflow policy it cannot honour', () => {
    for (const opts of [{ mailbox: 0 }, { mailbox: 1.5 }, { mailbox: -1 }, { overflow: 'drop' as 'wait' }]) {
      expect(() => mailboxOf(new Worker(), opts)).toThrow(
        expect.objectContaining({ code: 'HEAPLESS_ERR_ACTOR_INVALID_OPTION' }),
      );
      expect(() => mailboxOf(new Worker(), opts)).toThrow(ActorError);
    }
  });
});
