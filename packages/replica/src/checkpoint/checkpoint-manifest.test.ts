import { describe, expect, it } from 'vitest';
import { ReplicaError } from '../errors.js';
import {
  type CheckpointManifest,
  checkpointId,
  decodeManifest,
  encodeManifest,
  fileObject,
  isSafePath,
  manifestObject,
  parseManifestObject,
} from './checkpoint-manifest.js';

const id = checkpointId(42, 'abc123');
const good: CheckpointManifest = {
  format: 1,
  id,
  schema: 'users-v1',
  position: 42,
  stream: 'changes',
  createdAt: '2026-01-02T03:04:05.000Z',
  files: [
    { path: 'MANIFEST-000001', size: 10, sha256: 'a'.repeat(64) },
    { path: 'tables/000002.sst', size: 5, sha256: 'b'.repeat(64) },
  ],
  totalBytes: 15,
};
const where = { schema: 'users-v1', id };

function corrupt(manifest: unknown): string {
  try {
    decodeManifest(Buffer.from(JSON.stringify(manifest)), where);
  } catch (err) {
    expect(err).toBeInstanceOf(ReplicaError);
    expect((err as ReplicaError).code).toBe('HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT');
    return (err as ReplicaError).message;
  }
  throw new Error('expected CHECKPOINT_CORRUPT');
}

describe('checkpoint manifests', () => {
  it('names objects so that ids sort by position and manifests are found by name', () => {
    expect(id).toBe('0000000000000042-abc123');
    expect(checkpointId(2 ** 53 - 1, 'x')).toBe('9007199254740991-x');
    expect(manifestObject('users-v1', id)).toBe(`checkpoints/users-v1/${id}/manifest.json`);
    expect(fileObject('users-v1', id, 'a/b')).toBe(`checkpoints/users-v1/${id}/files/a/b`);
    expect(parseManifestObject(manifestObject('users-v1', id))).toEqual({ schema: 'users-v1', id, position: 42 });
    for (const other of [
      fileObject('users-v1', id, 'manifest.json'),
      'checkpoints/users-v1/42-x/manifest.json',
      'checkpoints/bad schema/0000000000000042-x/manifest.json',
      'elsewhere/manifest.json',
    ])
      expect(parseManifestObject(other)).toBeUndefined();
  });

  it('reads back what it writes, in format 2 and in format 1', () => {
    expect(decodeManifest(encodeManifest(good), where)).toEqual(good);
    const v2: CheckpointManifest = {
      ...good,
      format: 2,
      files: [
        { ...good.files[0]!, encoding: 'lz4-frames', storedSize: 7, storedSha256: 'c'.repeat(64) },
        good.files[1]!,
      ],
    };
    expect(decodeManifest(encodeManifest(v2), where)).toEqual(v2);
    const { stream: _, ...withoutStream } = good;
    expect(decodeManifest(Buffer.from(JSON.stringify(withoutStream)), where).stream).toBeUndefined();
  });

  it('refuses damaged and hostile manifests, saying what is wrong', () => {
    expect(corrupt('just a string')).toMatch(/not a JSON object/);
    expect(corrupt([good])).toMatch(/not a JSON object/);
    expect(corrupt({ ...good, format: 3 })).toMatch(/format 3, not one of 1, 2/);
    const encoded = { ...good.files[0]!, encoding: 'lz4-frames', storedSize: 7, storedSha256: 'c'.repeat(64) };
    expect(corrupt({ ...good, files: [encoded, good.files[1]] })).toMatch(/encoding "lz4-frames" in a format 1/);
    const v2 = { ...good, format: 2 };
    expect(corrupt({ ...v2, files: [{ ...encoded, encoding: 'zip' }], totalBytes: 10 })).toMatch(/encoding "zip"/);
    expect(corrupt({ ...v2, files: [{ ...encoded, storedSize: -1 }], totalBytes: 10 })).toMatch(/storedSize -1/);
    const noDigest = { ...encoded, storedSha256: undefined };
    expect(corrupt({ ...v2, files: [noDigest], totalBytes: 10 })).toMatch(/no storedSha256 in hex/);
    const upper = { ...encoded, storedSha256: 'C'.repeat(64) };
    expect(corrupt({ ...v2, files: [upper], totalBytes: 10 })).toMatch(/no storedSha256 in hex/);
    expect(corrupt({ ...v2, files: [{ ...good.files[0], storedSize: 3 }], totalBytes: 10 })).toMatch(/no encoding/);
    expect(corrupt({ ...good, id: '0000000000000042-other' })).toMatch(/under the name of/);
    expect(corrupt({ ...good, schema: 'users-v2' })).toMatch(/schema "users-v2" under users-v1/);
    expect(corrupt({ ...good, position: 43 })).toMatch(/position 43 disagrees/);
    expect(corrupt({ ...good, position: -1 })).toMatch(/position -1/);
    expect(corrupt({ ...good, createdAt: 'yesterday' })).toMatch(/createdAt/);
    expect(corrupt({ ...good, files: {} })).toMatch(/files is not an array/);
    expect(corrupt({ ...good, files: [null] })).toMatch(/files\[0\] is not an object/);
    const file = good.files[0]!;
    for (const path of ['../up', '/abs', 'a//b', './a', 'a/..', 'c:\\x', 'a\\b', 'nul\u0000', ''])
      expect(corrupt({ ...good, files: [{ ...file, path }], totalBytes: 10 })).toMatch(/unsafe path/);
    expect(corrupt({ ...good, files: [file, file], totalBytes: 20 })).toMatch(/names MANIFEST-000001 a second time/);
    expect(corrupt({ ...good, files: [{ ...file, size: 1.5 }] })).toMatch(/has size 1.5/);
    expect(corrupt({ ...good, files: [{ ...file, sha256: 'A'.repeat(64) }], totalBytes: 10 })).toMatch(/SHA-256/);
    expect(corrupt({ ...good, totalBytes: 14 })).toMatch(/totalBytes 14, the files add up to 15/);
    expect(() => decodeManifest(Uint8Array.of(0xff, 0xfe), where)).toThrow(/not JSON/);
    expect(() => decodeManifest(new Uint8Array(4 * 1024 * 1024 + 1), where)).toThrow(/at most 4 MiB/);
  });

  it('isSafePath keeps paths inside their directory', () => {
    expect(isSafePath('tables/level-1/000001.sst')).toBe(true);
    expect(isSafePath('..hidden')).toBe(true);
    expect(isSafePath('a/../../etc/passwd')).toBe(false);
    expect(isSafePath('x'.repeat(1025))).toBe(false);
  });
});
