import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { putVarint64 } from '../base/coding.js';
import { CorruptionError } from '../base/errors.js';
import { makeInternalKey, ValueKind } from '../base/internal-key.js';
import { type FileMetaData, Tag, VersionEdit } from './version-edit.js';

const enc = new TextEncoder();

const fileArb: fc.Arbitrary<FileMetaData> = fc.record({
  number: fc.maxSafeNat(),
  size: fc.maxSafeNat(),
  entries: fc.maxSafeNat(),
  smallest: fc.uint8Array({ maxLength: 40 }),
  largest: fc.uint8Array({ maxLength: 40 }),
});

const editArb: fc.Arbitrary<VersionEdit> = fc
  .record({
    logNumber: fc.option(fc.maxSafeNat(), { nil: undefined }),
    nextFileNumber: fc.option(fc.maxSafeNat(), { nil: undefined }),
    lastSequence: fc.option(fc.maxSafeNat(), { nil: undefined }),
    deleted: fc.array(fc.tuple(fc.nat({ max: 20 }), fc.maxSafeNat()), { maxLength: 5 }),
    added: fc.array(fc.tuple(fc.nat({ max: 20 }), fileArb), { maxLength: 5 }),
  })
  .map((r) => {
    const e = new VersionEdit();
    e.logNumber = r.logNumber;
    e.nextFileNumber = r.nextFileNumber;
    e.lastSequence = r.lastSequence;
    for (const [level, n] of r.deleted) e.deleteFile(level, n);
    for (const [level, f] of r.added) e.addFile(level, f);
    return e;
  });

/** Decodes `bytes`, returning the edit or the CorruptionError; any other outcome fails the test. */
function decode(bytes: Uint8Array): VersionEdit | CorruptionError {
  try {
    return VersionEdit.decode(bytes, 'MANIFEST-000007', 4242);
  } catch (err) {
    expect(err).toBeInstanceOf(CorruptionError);
    expect(err).toMatchObject({ file: 'MANIFEST-000007', offset: 4242 });
    return err as CorruptionError;
  }
}

describe('version edits', () => {
  it('round-trip, large numbers included', () => {
    const e = new VersionEdit();
    e.logNumber = 2 ** 40 + 3;
    e.nextFileNumber = 77;
    e.lastSequence = 2 ** 45 - 1;
    e.deleteFile(3, 12);
    e.addFile(1, {
      number: 9,
      size: 1009,
      entries: 10,
      smallest: makeInternalKey(enc.encode('a'), 6, ValueKind.Value),
      largest: makeInternalKey(enc.encode('zz'), 1, ValueKind.Deletion),
    });
    expect(VersionEdit.decode(e.encode(), 'm', 0)).toEqual(e);
    expect(VersionEdit.decode(new VersionEdit().encode(), 'm', 0)).toEqual(new VersionEdit());
  });

  it('round-trip any edit of safe integers and keys', () => {
    fc.assert(
      fc.property(editArb, (e) => {
        expect(VersionEdit.decode(e.encode(), 'm', 0)).toEqual(e);
      }),
    );
  });

  it('turn every cut of an encoding into an edit of whole fields or a CorruptionError', () => {
    fc.assert(
      fc.property(editArb, fc.nat(), (e, n) => {
        const bytes = e.encode();
        const cut = bytes.subarray(0, n % (bytes.length + 1));
        decode(cut); // a cut at a field boundary is a shorter edit, anything else corruption
      }),
    );
    // Inside a new-file field, a cut is always corruption.
    const e = new VersionEdit();
    e.addFile(2, { number: 5, size: 100, entries: 3, smallest: enc.encode('key-a'), largest: enc.encode('key-z') });
    const bytes = e.encode();
    for (let n = 1; n < bytes.length; n++) expect(decode(bytes.subarray(0, n))).toBeInstanceOf(CorruptionError);
  });

  it('refuse hostile bytes with a CorruptionError naming the manifest and offset, never another error', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => void decode(bytes)));
    const varint = (v: number) => {
      const b = new Uint8Array(8);
      return [...b.subarray(0, putVarint64(b, 0, v))];
    };
    const cases: [string, number[]][] = [
      ['unknown version edit tag 5', [5, 1]],
      ['unknown version edit tag 99', [...varint(Tag.LastSequence), 1, 99]],
      ['bad varint in version edit', [Tag.LogNumber, 0x80]],
      ['bad varint in version edit', [Tag.LogNumber, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]],
      // 2^53: past the integers a number holds exactly.
      ['bad varint in version edit', [Tag.NextFileNumber, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]],
      ['truncated key in version edit', [Tag.NewFile, 1, 2, 3, 4, ...varint(1000), 1, 2]],
      ['bad varint in version edit', [Tag.DeletedFile, 1]],
    ];
    for (const [what, bytes] of cases) {
      const r = decode(new Uint8Array(bytes));
      expect(r).toBeInstanceOf(CorruptionError);
      expect((r as CorruptionError).message).toBe(`corruption in MANIFEST-000007 at offset 4242: ${what}`);
    }
  });
});
