import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CorruptionError } from '../base/errors.js';
import { makeInternalKey, ValueKind } from '../base/internal-key.js';
import { type FileMetaData, VersionEdit } from './version-edit.js';
import { VersionSet } from './version-set.js';

const enc = new TextEncoder();
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-vs-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function file(number: number, from: string, to: string, seq = 1): FileMetaData {
  return {
    number,
    size: 1000 + number,
    entries: 10,
    smallest: makeInternalKey(enc.encode(from), seq + 5, ValueKind.Value),
    largest: makeInternalKey(enc.encode(to), seq, ValueKind.Deletion),
  };
}

describe('version edits and the manifest', () => {
  it('recovers tables, file numbers, log number and last sequence exactly after reopen', () => {
    const vs = new VersionSet(dir, 7);
    vs.writeNewManifest();
    const e1 = new VersionEdit();
    const a = vs.newFileNumber();
    const b = vs.newFileNumber();
    e1.addFile(0, file(a, 'a', 'm'));
    e1.addFile(0, file(b, 'c', 'z'));
    e1.logNumber = vs.newFileNumber();
    vs.lastSequence = 1234;
    vs.logAndApply(e1);
    const e2 = new VersionEdit();
    const c = vs.newFileNumber();
    e2.deleteFile(0, a);
    e2.addFile(1, file(c, 'a', 'm'));
    vs.lastSequence = 2 ** 33 + 7;
    vs.logAndApply(e2);
    const expected = { next: vs.nextFileNumber, log: vs.logNumber, seq: vs.lastSequence, dump: vs.current.dump() };
    vs.close();

    const again = new VersionSet(dir, 7);
    again.recover();
    expect({
      next: again.nextFileNumber,
      log: again.logNumber,
      seq: again.lastSequence,
      dump: again.current.dump(),
    }).toEqual(expected);
    expect(again.current.dump()).toEqual([`L0: ${b}[c..z]`, `L1: ${c}[a..m]`]);
    // A fresh manifest at reopen holds the same state.
    again.writeNewManifest();
    const n = again.nextFileNumber;
    again.close();
    const third = new VersionSet(dir, 7);
    third.recover();
    expect(third.current.dump()).toEqual(expected.dump);
    expect(third.nextFileNumber).toBe(n);
    expect(readFileSync(join(dir, 'CURRENT'), 'utf8')).toMatch(/^MANIFEST-\d{6}\n$/);
    expect(readdirSync(dir).some((f) => f.endsWith('.dbtmp'))).toBe(false);
    third.close();
  });

  it('keeps versions that readers hold, and forgets them once released', () => {
    const vs = new VersionSet(dir, 7);
    vs.writeNewManifest();
    const e = new VersionEdit();
    e.addFile(1, file(vs.newFileNumber(), 'a', 'b'));
    vs.logAndApply(e);
    const held = vs.current;
    held.ref();
    const e2 = new VersionEdit();
    e2.deleteFile(1, held.files[1]![0]!.number);
    vs.logAndApply(e2);
    expect(vs.liveTableNumbers().has(held.files[1]![0]!.number)).toBe(true);
    held.unref();
    expect(held.referenced).toBe(false);
    expect(vs.liveTableNumbers().size).toBe(0);
    vs.close();
  });

  it('reports a damaged manifest or CURRENT as corruption', () => {
    const vs = new VersionSet(dir, 7);
    vs.writeNewManifest();
    const e = new VersionEdit();
    e.addFile(1, file(vs.newFileNumber(), 'a', 'b'));
    vs.logAndApply(e);
    vs.logAndApply(new VersionEdit());
    const manifest = join(dir, `MANIFEST-${String(vs.manifestNumber).padStart(6, '0')}`);
    vs.close();
    const bytes = readFileSync(manifest);
    bytes[20]! ^= 0x10;
    writeFileSync(manifest, bytes);
    expect(() => new VersionSet(dir, 7).recover()).toThrow(CorruptionError);
    writeFileSync(join(dir, 'CURRENT'), 'nonsense');
    expect(() => new VersionSet(dir, 7).recover()).toThrow(CorruptionError);
  });
});
