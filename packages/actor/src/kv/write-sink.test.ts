// The KV actor with a write sink (what a following server has): every write goes to the sink, checked first, in
// the order of the calls, one atomic unit per call; the map changes only through the sink; metadata writes are
// FORBIDDEN; a batch over the sink's limit is BATCH_TOO_LARGE before anything is sent. The sink here is a log in
// memory that applies each unit to the map, as the follower does with the stream (the real one is covered by
// test/e2e-follow.test.ts).
import type { HeaplessError, WriteOp } from '@heapless/client/protocol';
import { OffHeapMap } from '@heapless/offheap';
import { pack, unpack } from 'msgpackr';
import { afterEach, describe, expect, it } from 'vitest';
import { spawn } from '../runtime/spawn.js';
import { KvActor } from './kv-actor.js';
import type { WriteSink } from './write-sink.js';

class MemoryLog implements WriteSink {
  readonly maxOps = 3;
  readonly units: WriteOp[][] = [];
  constructor(private readonly map: OffHeapMap<string, unknown>) {}
  async write(ops: readonly WriteOp[]): Promise<{ sequence: number }> {
    this.units.push([...ops]);
    await Promise.resolve(); // applied later, as the stream's messages are
    const b = this.map.batch();
    for (const op of ops) op.type === 'set' ? b.setBytes(op.key, op.value) : b.delete(op.key);
    await b.write();
    return { sequence: this.units.length };
  }
}

const refs: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  for (const r of refs.splice(0)) await r.stop();
});

function following() {
  const map = new OffHeapMap<string, unknown>({ threads: 1 });
  const log = new MemoryLog(map);
  let closed = false;
  const ref = spawn(
    new KvActor(map, {
      persistent: false,
      writeSink: log,
      close: async () => {
        closed = true;
        await map.close();
      },
    }),
  );
  refs.push(ref);
  return { ref, log, map, closed: () => closed };
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return (e as HeaplessError).code;
  }
  return 'resolved';
}

describe('KvActor with a write sink', () => {
  it('sends each write to the sink as one unit, in call order, and answers once it is applied', async () => {
    const { ref, log } = following();
    await ref.set('a', pack(1));
    expect(unpack((await ref.get('a'))!)).toBe(1); // read-your-writes: answered after the sink applied it
    expect(await ref.delete('a')).toBe(true);
    expect(await ref.delete('a')).toBe(false);
    expect(
      await ref.setMany([
        ['b', pack(2)],
        ['c', pack(3)],
      ]),
    ).toEqual({ sequence: 4 });
    expect(
      await ref.batch([
        { type: 'delete', key: 'b' },
        { type: 'set', key: 'd', value: pack(4) },
      ]),
    ).toEqual({ sequence: 5 });
    expect(log.units.map((u) => u.map((op) => `${op.type} ${op.key}`))).toEqual([
      ['set a'],
      ['delete a'],
      ['delete a'],
      ['set b', 'set c'],
      ['delete b', 'set d'],
    ]);
    expect(await ref.size()).toBe(2);
  });

  it('checks before sending: bad input, metadata and oversized batches reach no sink', async () => {
    const { ref, log } = following();
    expect(await code(ref.set('k', 'not bytes' as never))).toBe('BAD_ARGUMENTS');
    expect(
      await code(ref.batch([{ type: 'set', key: 'x', value: pack(1) }, { type: 'nope', key: 'y' } as never])),
    ).toBe('BAD_ARGUMENTS');
    expect(await code(ref.setMeta('m', new Uint8Array([1])))).toBe('FORBIDDEN');
    expect(await code(ref.deleteMeta('m'))).toBe('FORBIDDEN');
    expect(await code(ref.batch([], { meta: { m: new Uint8Array([1]) } }))).toBe('FORBIDDEN');
    const four = ['a', 'b', 'c', 'd'].map((key) => ({ type: 'delete' as const, key }));
    expect(await code(ref.batch(four))).toBe('BATCH_TOO_LARGE');
    expect(log.units).toEqual([]);
  });

  it('leaves closing the map to its owner', async () => {
    const f = following();
    await f.ref.stop();
    refs.splice(0);
    expect(f.closed()).toBe(true);
  });
});
