import { describe, expect, it } from 'vitest';
import { CorruptionError } from '../base/errors.js';
import { type BatchHandler, batchCount, batchSequence, replayBatch, WriteBatch } from './write-batch.js';

function replay(b: WriteBatch, end = b.length): string[] {
  const out: string[] = [];
  const h: BatchHandler = {
    put: (buf, ks, kl, vs, vl, seq) =>
      out.push(`put ${Buffer.from(buf.subarray(ks, ks + kl))}=${Buffer.from(buf.subarray(vs, vs + vl))}@${seq}`),
    del: (buf, ks, kl, seq) => out.push(`del ${Buffer.from(buf.subarray(ks, ks + kl))}@${seq}`),
  };
  replayBatch(b.rep, end, batchSequence(b.rep), h, new Int32Array(1), 'x.log', 7);
  return out;
}

describe('write batch', () => {
  it('encodes puts and deletes, strings as UTF-8, and replays them with consecutive sequences', () => {
    const b = new WriteBatch(undefined, 4);
    b.put('k1', 'v1')
      .del(new Uint8Array([0x6b, 0x32]))
      .put('é', 'x'.repeat(300));
    b.seal(2 ** 40 + 5);
    expect(batchCount(b.rep)).toBe(3);
    expect(batchSequence(b.rep)).toBe(2 ** 40 + 5);
    expect(replay(b)).toEqual([
      `put k1=v1@${2 ** 40 + 5}`,
      `del k2@${2 ** 40 + 6}`,
      `put é=${'x'.repeat(300)}@${2 ** 40 + 7}`,
    ]);
    b.clear();
    expect(b.count).toBe(0);
    b.seal(1);
    expect(replay(b)).toEqual([]);
  });

  it('rejects keys and values of the wrong type with a typed error', () => {
    const b = new WriteBatch();
    expect(() => b.put(42 as unknown as string, 'v')).toThrow(
      expect.objectContaining({ code: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT' }),
    );
    expect(() => b.del(null as unknown as string)).toThrow(
      expect.objectContaining({ code: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT' }),
    );
  });

  it('reports a truncated or malformed batch as corruption', () => {
    const b = new WriteBatch();
    b.put('key', 'value').put('k2', 'v2');
    b.seal(1);
    expect(() => replay(b, b.length - 1)).toThrow(CorruptionError);
    b.rep[12] = 9;
    expect(() => replay(b)).toThrow(/unknown entry kind 9/);
  });
});

describe('write batch encoding of every kind of string and buffer', () => {
  it('round-trips ASCII, multi-byte UTF-8, long strings (multi-byte varints) and buffers, growing from a tiny buffer', () => {
    const b = new WriteBatch(undefined, 1);
    const cases: Array<[string | Uint8Array, string | Uint8Array]> = [
      ['', ''],
      ['a', 'é'],
      ['日本語', '🙂'.repeat(50)],
      ['k'.repeat(127), 'v'.repeat(128)],
      ['ü'.repeat(200), new Uint8Array(300).fill(7)],
      [new Uint8Array([0, 1, 2]), 'x'.repeat(20000)],
    ];
    for (const [k, v] of cases) b.put(k, v);
    b.del('é'.repeat(70));
    b.seal(1);
    const bytes = (x: string | Uint8Array) =>
      Buffer.from(typeof x === 'string' ? Buffer.from(x, 'utf8') : x).toString('hex');
    const got: string[] = [];
    replayBatch(
      b.rep,
      b.length,
      1,
      {
        put: (buf, ks, kl, vs, vl) =>
          got.push(
            `${Buffer.from(buf.subarray(ks, ks + kl)).toString('hex')}=${Buffer.from(buf.subarray(vs, vs + vl)).toString('hex')}`,
          ),
        del: (buf, ks, kl) => got.push(`del ${Buffer.from(buf.subarray(ks, ks + kl)).toString('hex')}`),
      },
      new Int32Array(1),
      'x',
      0,
    );
    expect(got).toEqual([...cases.map(([k, v]) => `${bytes(k)}=${bytes(v)}`), `del ${bytes('é'.repeat(70))}`]);
  });

  it('leaves the batch unchanged when an entry is rejected', () => {
    const b = new WriteBatch();
    b.put('a', 'b');
    const len = b.length;
    expect(() => b.put('k', {} as unknown as string)).toThrow(
      expect.objectContaining({ code: 'HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT' }),
    );
    expect([b.length, b.count]).toEqual([len, 1]);
  });
});
