import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SystemUnavailableError } from '../harness/benchmark.js';
import { documentBytes, documentKey, documents, probeKeyNumber } from './documents.js';
import { openReadSystem, zstdWritable } from './stores.js';
import { OPEN_READ_SYSTEMS } from './system-names.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-open-read-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('seed-open-read documents', () => {
  it('are the seed shape: JSON text of 0–2000 printable characters and created_at, under 4-byte BE keys', () => {
    const lengths: number[] = [];
    let i = 0;
    for (const [key, value] of documents(400)) {
      expect([...key]).toEqual([(i >>> 24) & 255, (i >>> 16) & 255, (i >>> 8) & 255, i & 255]);
      const doc = JSON.parse(new TextDecoder().decode(value)) as { text: string; created_at: number };
      expect(Object.keys(doc)).toEqual(['text', 'created_at']);
      expect(doc.text).toMatch(/^[\x20-\x7e]*$/);
      expect(value.length).toBe(doc.text.length + 35); // no escapes: one byte per character
      lengths.push(doc.text.length);
      i++;
    }
    expect(i).toBe(400);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(2000);
    expect(Math.min(...lengths)).toBeLessThan(100);
    expect(Math.max(...lengths)).toBeGreaterThan(1900);
  });

  it('are the same on every call, so every system stores and checks the same bytes', () => {
    expect(Buffer.from(documentBytes(300, 150)).equals(Buffer.from(documentBytes(300, 150)))).toBe(true);
    expect(Buffer.from(documentBytes(300, 150)).equals(Buffer.from(documentBytes(300, 151)))).toBe(false);
    expect(probeKeyNumber(1_000_000)).toBe(123_456);
    expect(probeKeyNumber(300)).toBe(150);
    expect([...documentKey(123_456)]).toEqual([0, 1, 0xe2, 0x40]);
  });
});

describe('seed-open-read systems', () => {
  // Each system loads a few batches and reads every kind of document back after a reopen, twice.
  for (const name of OPEN_READ_SYSTEMS) {
    it(`${name} reads back what it loaded after reopening`, async () => {
      const system = openReadSystem(name);
      const n = 2500;
      let reported = 0;
      if (name === 'heapless-zstd' && !zstdWritable()) {
        expect(() => system.load(dir, documents(n), () => {})).toThrow(SystemUnavailableError);
        return;
      }
      await system.load(dir, documents(n), (done) => (reported = done));
      // Read-only and follower readers open beside a writer that holds the directory.
      const writer = await system.holdWriter?.(dir);
      expect(reported).toBe(2000);
      for (let round = 0; round < 2; round++) {
        const reader = await system.open(dir);
        for (const probe of [0, 999, 1000, probeKeyNumber(n), n - 1]) {
          const value = await reader.get(documentKey(probe));
          expect(value, `document ${probe}`).toBeDefined();
          expect(Buffer.from(value!).equals(Buffer.from(documentBytes(n, probe))), `document ${probe}`).toBe(true);
        }
        expect(await reader.get(documentKey(n))).toBeUndefined();
        await reader.close();
      }
      await writer?.close();
    });
  }
});
