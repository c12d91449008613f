import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { OffHeapMap } from '../map/offheap-map.js';
import { IMAGE_FILE } from './image.js';
import { ImageStreamCheck, VerifiedImage } from './image-check.js';
import { nativeStatus } from './native.js';

const root = mkdtempSync(join(tmpdir(), 'offheap-image-check-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;

/** A closed map directory (with its image) of `n` keys, some deleted, and the model of what it holds. */
async function closedMap(n: number): Promise<{ dir: string; model: Map<string, string> }> {
  const dir = join(root, `m${dirs++}`);
  const map = await OffHeapMap.open<string, string>({ dir });
  const model = new Map<string, string>();
  for (let i = 0; i < n; i++) {
    const value = `value-${i}-${'y'.repeat(i % 300)}`;
    map.set(`k${i}`, value);
    model.set(`k${i}`, value);
  }
  for (let i = 0; i < n; i += 5) {
    map.delete(`k${i}`);
    model.delete(`k${i}`);
  }
  await map.close();
  return { dir, model };
}

/** The check of `bytes` pushed in pieces cut at `cuts` (offsets, any order). */
function checkInPieces(bytes: Uint8Array, cuts: number[] = []): VerifiedImage | string {
  const check = new ImageStreamCheck(bytes.length);
  let at = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    check.push(bytes.subarray(at, cut));
    at = cut;
  }
  check.push(bytes.subarray(at));
  return check.end();
}

describe('ImageStreamCheck', () => {
  it('verifies an image pushed in pieces of any size, and an open given the proof reads no section', async () => {
    const { dir, model } = await closedMap(20_000);
    const bytes = readFileSync(join(dir, IMAGE_FILE));
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: bytes.length }), { maxLength: 12 }), (cuts) => {
        expect(checkInPieces(bytes, cuts)).toBeInstanceOf(VerifiedImage);
      }),
      { numRuns: 40 },
    );
    // Every byte alone, through the header and into the first section.
    const check = new ImageStreamCheck(bytes.length);
    for (let i = 0; i < 70_000; i++) check.push(bytes.subarray(i, i + 1));
    check.push(bytes.subarray(70_000));
    const proof = check.end();
    expect(proof).toBeInstanceOf(VerifiedImage);

    const map = await OffHeapMap.open<string, string>({ dir, verifiedImage: proof as VerifiedImage });
    try {
      // Sections are mapped unread only by the native loader; the plain one reads (and checks) them anyway.
      const expected = nativeStatus.imageLoader === 'mapped' ? 'stream' : 'open';
      expect(map.openStats).toMatchObject({ source: 'image', imageCheck: expected });
      expect(new Map(map.entries())).toEqual(model);
      map.set('after', 'open');
      expect(map.get('after')).toBe('open');
    } finally {
      await map.close();
    }
    // Without the proof the same directory checks its image at the open.
    const again = await OffHeapMap.open<string, string>({ dir });
    expect(again.openStats).toMatchObject({ source: 'image', imageCheck: 'open' });
    await again.close();
  });

  it('names what is wrong: a changed byte in a section or the header, a cut, another length, not an image', async () => {
    const { dir } = await closedMap(3000);
    const bytes = readFileSync(join(dir, IMAGE_FILE));
    const last = bytes.length - 1;
    const flipped = (at: number) => {
      const copy = Buffer.from(bytes);
      copy[at]! ^= 0x40;
      return copy;
    };
    expect(checkInPieces(flipped(last))).toMatch(/checksum mismatch in the section at byte/);
    expect(checkInPieces(flipped(200))).toMatch(/header checksum mismatch/);
    expect(checkInPieces(flipped(3))).toMatch(/bad magic/);
    const cut = new ImageStreamCheck(bytes.length);
    cut.push(bytes.subarray(0, last));
    expect(cut.end()).toMatch(/bytes, \d+ announced/);
    const short = new ImageStreamCheck(500);
    short.push(bytes.subarray(0, 500));
    expect(short.end()).toMatch(/truncated \(header\)|section count or length/);
    expect(checkInPieces(new Uint8Array(4096))).toMatch(/bad magic/);
    expect(checkInPieces(new Uint8Array(0))).toMatch(/truncated \(header\)/);
    // Bytes pushed after a problem change nothing.
    const late = new ImageStreamCheck(bytes.length);
    late.push(flipped(3));
    expect(late.end()).toMatch(/bad magic/);
  });

  it('a proof of another image does not skip the check, and a damaged file the proof does not cover is refused', async () => {
    const { dir, model } = await closedMap(2000);
    const first = checkInPieces(readFileSync(join(dir, IMAGE_FILE)));
    expect(first).toBeInstanceOf(VerifiedImage);
    const map = await OffHeapMap.open<string, string>({ dir });
    map.set('more', 'writes');
    model.set('more', 'writes');
    await map.close(); // a new image, with another header
    const reopened = await OffHeapMap.open<string, string>({ dir, verifiedImage: first as VerifiedImage });
    expect(reopened.openStats).toMatchObject({ source: 'image', imageCheck: 'open' });
    expect(new Map(reopened.entries())).toEqual(model);
    await reopened.close();

    // The same header over a damaged section: the open checks it (it was never verified) and rebuilds by a scan.
    const file = join(dir, IMAGE_FILE);
    const good = readFileSync(file);
    const proof = checkInPieces(good) as VerifiedImage;
    const bad = Buffer.from(good);
    bad[bad.length - 1]! ^= 1;
    expect(checkInPieces(bad)).toMatch(/checksum mismatch/);
    writeFileSync(file, bad);
    const scanned = await OffHeapMap.open<string, string>({ dir });
    expect(scanned.openStats).toMatchObject({ source: 'scan' });
    expect(scanned.openStats.imageRejected).toMatch(/checksum mismatch/);
    expect(new Map(scanned.entries())).toEqual(model);
    await scanned.close();
    expect(proof.matches(good.subarray(0, 10))).toBe(false);
  });

  it('is made by the check only', () => {
    expect(() => new VerifiedImage(Symbol('VerifiedImage'), Buffer.alloc(8))).toThrow(TypeError);
  });
});
