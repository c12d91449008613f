import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  dataHeader,
  encodeClose,
  encodePreface,
  HEARTBEAT_RECORD,
  TcpProtocolError,
  type TcpRecord,
  TcpRecordReader,
} from './tcp-records.js';

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Feeds `bytes` to a reader cut at `cuts`, taking the preface first, then every record. */
function readAll(bytes: Uint8Array, cuts: number[]): { token: string | undefined; records: TcpRecord[] } {
  const reader = new TcpRecordReader(1024);
  const records: TcpRecord[] = [];
  let preface: { token: string | undefined } | null = null;
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  let from = 0;
  for (const to of [...points, bytes.length]) {
    reader.push(bytes.slice(from, to));
    from = Math.max(from, to);
    if (preface === null) preface = reader.preface();
    if (preface === null) continue;
    for (let r = reader.next(); r !== null; r = reader.next()) records.push(r);
  }
  return { token: preface?.token, records };
}

describe('TCP records', () => {
  it('read the same preface and records however the stream is cut', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40 }),
        fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (token, frames, cuts) => {
          const stream = concat([
            encodePreface(token),
            ...frames.flatMap((f) => [dataHeader(f.length), f]),
            HEARTBEAT_RECORD,
            encodeClose(1001, 'SHUTTING_DOWN'),
          ]);
          const got = readAll(stream, cuts);
          expect(got.token).toBe(token === '' ? undefined : token);
          expect(got.records).toEqual([
            ...frames.map((f) => ({ close: false, bytes: f })),
            { close: false, bytes: new Uint8Array(0) },
            { close: true, code: 1001, reason: 'SHUTTING_DOWN' },
          ]);
        },
      ),
    );
  });

  it('refuse a header over the limit once its 4 bytes are in, and a bad preface at its first wrong byte', () => {
    const reader = new TcpRecordReader(1024);
    reader.push(dataHeader(1025));
    expect(() => reader.next()).toThrow(TcpProtocolError);
    const other = new TcpRecordReader(1024);
    other.push(new TextEncoder().encode('HEAX'));
    expect(() => other.preface()).toThrow(expect.objectContaining({ code: 1002, reason: 'UNSUPPORTED_PROTOCOL' }));
    const early = new TcpRecordReader(1024);
    early.push(new TextEncoder().encode('HEA'));
    expect(early.preface()).toBe(null);
  });
});
