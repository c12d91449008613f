import { pack, unpack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { FrameEncoder } from './frame-encoder.js';

describe('FrameEncoder', () => {
  it('writes a call frame that any msgpack reader decodes, bytes as bin', () => {
    const enc = new FrameEncoder();
    const value = new Uint8Array([1, 2, 3, 250]);
    const bytes = enc.encode([[1, 'set', ['k', value]]]);
    // fixarray(1) fixarray(3) id=1 fixstr(3)"set" fixarray(2) fixstr(1)"k" bin8 len=4 ...
    expect([...bytes]).toEqual([0x91, 0x93, 0x01, 0xa3, 0x73, 0x65, 0x74, 0x92, 0xa1, 0x6b, 0xc4, 4, 1, 2, 3, 250]);
    expect(unpack(bytes)).toEqual([[1, 'set', ['k', Buffer.from(value)]]]);
    expect(Buffer.isBuffer(bytes)).toBe(true);
  });

  it('reuses one buffer for every frame', () => {
    const enc = new FrameEncoder();
    const a = enc.encode([[1, 'get', ['a']]]);
    const b = enc.encode([[2, 'get', ['b']]]);
    expect(a.buffer).toBe(b.buffer);
    expect(a.byteOffset).toBe(b.byteOffset);
  });

  it('does not let msgpackr write other packs into its buffer', () => {
    const enc = new FrameEncoder();
    enc.encode([[1, 'get', ['a']]]);
    const foreign = pack({ hello: 'world' });
    const copy = Uint8Array.from(foreign);
    enc.encode([[2, 'set', ['b', 'x'.repeat(100)]]]);
    expect(Uint8Array.from(foreign)).toEqual(copy);
    expect(unpack(foreign)).toEqual({ hello: 'world' });
  });

  it('grows for a big frame and detaches on request', () => {
    const enc = new FrameEncoder();
    const big = new Uint8Array(200_000).fill(7);
    const out = enc.encodeDetached([[1, 'set', ['k', big]]]);
    const again = enc.encode([[2, 'get', ['k']]]);
    expect(unpack(out)[0][2][1]).toEqual(Buffer.from(big));
    expect(unpack(again)).toEqual([[2, 'get', ['k']]]);
  });
});
