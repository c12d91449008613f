/**
 * abstract-level's own shared test suite (the one classic-level and memory-level run), against HeaplessLevel on
 * real directories. Each tape test of the suite is one vitest test here: it fails if any of its assertions fails.
 * The last test checks the totals, including assertions that came after their test had ended.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeaplessLevel, type HeaplessLevelOptions } from './index.js';
import { collectTape, describeFailure, isFailure } from './test-support/tape-in-vitest.js';

/** abstract-level/test is CommonJS without typings: `suite({ test, factory })` registers every test on `test`. */
type Suite = (options: { test: unknown; factory: (options?: object) => unknown }) => void;
const suite = createRequire(import.meta.url)('abstract-level/test') as Suite;

const root = mkdtempSync(join(tmpdir(), 'heapless-level-suite-'));
const opened: HeaplessLevel<unknown, unknown>[] = [];
let next = 0;

// A directory that does not exist yet per database, as the suite asks (its createIfMissing test needs that).
const factory = (options?: object) => {
  const db = new HeaplessLevel<unknown, unknown>(
    join(root, String(next++)),
    options as HeaplessLevelOptions<unknown, unknown>,
  );
  opened.push(db);
  return db;
};

const run = collectTape((test) => suite({ test, factory }), 30_000);

describe('abstract-level suite', () => {
  beforeAll(() => run.start());

  afterAll(async () => {
    // The suite closes what it opens; close whatever it left so that no engine outlives the file.
    await Promise.allSettled(opened.map((db) => db.close()));
    rmSync(root, { recursive: true, force: true });
  });

  for (const t of run.tests) {
    it(t.name, async () => {
      await t.ended;
      const failed = t.assertions.filter(isFailure);
      expect(failed.map(describeFailure)).toEqual([]);
    });
  }

  it('ran every assertion of the suite, none failed', async () => {
    await run.finished;
    const all = run.tests.flatMap((t) => t.assertions);
    const failed = run.tests.flatMap((t) =>
      t.assertions.filter(isFailure).map((a) => `${t.name}: ${describeFailure(a)}`),
    );
    console.info(
      `abstract-level suite: ${all.length} assertions in ${run.tests.length} tests, ${failed.length} failed, ${opened.length} databases`,
    );
    expect(run.tests.length).toBeGreaterThan(500);
    expect(failed).toEqual([]);
  });
});
