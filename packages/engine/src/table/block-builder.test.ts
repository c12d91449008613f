import { describe, expect, it } from 'vitest';
import { BlockBuilder } from './block-builder.js';

const enc = new TextEncoder();
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('block builder', () => {
  it('writes the documented layout: prefix-compressed entries, restarts, restart count', () => {
    const b = new BlockBuilder(2);
    b.add(enc.encode('apple'), enc.encode('1'));
    b.add(enc.encode('apply'), enc.encode('22'));
    b.add(enc.encode('banana'), enc.encode(''));
    const out = b.finish();
    const want = [
      '00 05 01 6170706c65 31', // shared 0, unshared 5, value 1, "apple", "1"
      '04 01 02 79 3232', // shares "appl", then "y", "22"
      '00 06 00 62616e616e61', // restart point: shares nothing
      '00000000 0f000000', // restarts at 0 and 15
      '02000000', // two restarts
    ].join('');
    expect(hex(out)).toBe(want.replaceAll(' ', ''));
    expect(b.sizeEstimate()).toBe(out.length + 12); // finish() appended the restarts to the buffer
  });

  it('reports its size as entries plus restart array, and resets', () => {
    const b = new BlockBuilder(16, 4);
    expect(b.empty).toBe(true);
    expect(b.sizeEstimate()).toBe(8);
    for (let i = 0; i < 100; i++) b.add(enc.encode(`k${i}`), new Uint8Array(50));
    expect(b.entries).toBe(100);
    const size = b.sizeEstimate();
    expect(b.finish().length).toBe(size);
    b.reset();
    expect(b.empty).toBe(true);
    b.add(enc.encode('a'), enc.encode('b'));
    expect(hex(b.finish())).toBe('000101' + '61' + '62' + '00000000' + '01000000');
  });

  it('rejects a restart interval below 1', () => {
    expect(() => new BlockBuilder(0)).toThrow(/restartInterval/);
  });
});
