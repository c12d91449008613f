// A damaged MANIFEST or CURRENT never costs data: for a small database, every single-byte flip of either file and a
// cut of the manifest at every length either opens with every acknowledged write (and nothing deleted coming back),
// or fails with CorruptionError leaving every file of the directory as it was.
import {
  closeSync,
  existsSync,
  ftruncateSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine, EngineError, ErrorCodes } from '@heapless/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const dec = new TextDecoder();
let dir: string;
/** The closed database's files, by name. */
let pristine: Map<string, Buffer>;
/** What the database holds: every write acknowledged before the close. */
const model = new Map<string, string>();

function snapshot(): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const name of readdirSync(dir).sort()) out.set(name, readFileSync(join(dir, name)));
  return out;
}

/** The first difference between two directory snapshots, or undefined. */
function difference(a: Map<string, Buffer>, b: Map<string, Buffer>): string | undefined {
  const names = [...a.keys()].join(' ');
  if (names !== [...b.keys()].join(' ')) return `listing ${names} became ${[...b.keys()].join(' ')}`;
  for (const [name, bytes] of a) if (!bytes.equals(b.get(name)!)) return `${name} changed`;
  return undefined;
}

/**
 * Opens the damaged directory. Returns 'failed' after checking that the open threw CorruptionError and changed no
 * file, or 'opened' after checking the contents against the model twice (once more after a reopen, since the
 * first open may have rewritten the manifest and deleted obsolete files).
 */
async function openDamaged(what: string): Promise<'failed' | 'opened'> {
  const before = snapshot();
  let db: Engine;
  try {
    db = await Engine.open(dir);
  } catch (err) {
    if (!(err instanceof EngineError) || err.code !== ErrorCodes.CORRUPTION) throw new Error(`${what}: ${err}`);
    const changed = difference(before, snapshot());
    if (changed !== undefined) throw new Error(`${what}: the failed open changed the directory: ${changed}`);
    return 'failed';
  }
  for (let round = 0; round < 2; round++) {
    const seen = new Map<string, string>();
    for await (const [k, v] of db.iterator()) seen.set(dec.decode(k), dec.decode(v));
    expect(seen, `${what} (round ${round})`).toEqual(model);
    await db.close();
    if (round === 0) db = await Engine.open(dir);
  }
  return 'opened';
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'heapless-manifest-'));
  // Small memtables and tables: a few flushes, compactions and table deletions make a manifest of several edits,
  // overwrites and deletes leave older versions in older tables (which a stale manifest would bring back), and the
  // last writes stay in the WAL. Tables uncompressed, so that these small sizes cut several of them.
  const db = await Engine.open(dir, { writeBufferSize: 64 * 1024, targetFileSize: 4096, compression: 'none' });
  const put = async (k: string, v: string) => {
    await db.put(k, v);
    model.set(k, v);
  };
  const round = async (r: number) => {
    for (let i = 0; i < 150; i++)
      await put(`k${String((i * 7) % 150).padStart(3, '0')}`, `r${r}-${'v'.repeat(i % 40)}`);
    for (let i = r; i < 150; i += 9) {
      await db.delete(`k${String(i).padStart(3, '0')}`);
      model.delete(`k${String(i).padStart(3, '0')}`);
    }
    await db.flush();
  };
  await round(0);
  await round(1);
  await db.compactRange();
  await round(2); // a level-0 table over the compacted level 1
  // Last, a table of keys above all others, moved down a level as it is (a trivial move): a manifest cut before
  // that move is an older state that still holds every write, which the open may accept.
  for (let i = 0; i < 20; i++) await put(`z${i}`, `top-${i}`);
  await db.flush();
  await db.compactRange('z', 'z~');
  for (let i = 0; i < 5; i++) await put(`k${String(i * 11).padStart(3, '0')}`, `last-${i}`);
  await db.close();
  pristine = snapshot();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Writes `bytes` as the file's contents in place: truncating a file to zero and rewriting it makes ext4 flush it at
 * close (auto_da_alloc), which thousands of cases would wait for.
 */
function putFile(name: string, bytes: Uint8Array): void {
  const path = join(dir, name);
  let fd: number;
  try {
    fd = openSync(path, 'r+');
  } catch {
    writeFileSync(path, bytes);
    return;
  }
  try {
    writeSync(fd, bytes, 0, bytes.length, 0);
    ftruncateSync(fd, bytes.length);
  } finally {
    closeSync(fd);
  }
}

/** Makes the directory hold exactly `files`, rewriting only what differs. */
function writeFiles(files: Map<string, Buffer>): void {
  for (const name of readdirSync(dir)) {
    const want = files.get(name);
    if (want === undefined) rmSync(join(dir, name));
    else if (!want.equals(readFileSync(join(dir, name)))) putFile(name, want);
  }
  for (const [name, bytes] of files) if (!existsSync(join(dir, name))) writeFileSync(join(dir, name), bytes);
}

describe('a damaged manifest', () => {
  const manifestName = () => [...pristine.keys()].find((n) => n.startsWith('MANIFEST-'))!;

  it('has something to damage: several edits, several tables, a WAL with data', () => {
    expect(manifestName()).toBeDefined();
    expect([...pristine.keys()].filter((n) => n.endsWith('.sst')).length).toBeGreaterThan(3);
    expect(pristine.get(manifestName())!.length).toBeGreaterThan(200);
    expect([...pristine.keys()].some((n) => n.endsWith('.log') && pristine.get(n)!.length > 0)).toBe(true);
  });

  it('every single-byte flip of MANIFEST and of CURRENT fails with CorruptionError and changes nothing', async () => {
    let tried = 0;
    for (const name of [manifestName(), 'CURRENT']) {
      const good = pristine.get(name)!;
      for (let i = 0; i < good.length; i++) {
        for (const mask of [0x01, 0x80]) {
          writeFiles(pristine);
          const bad = Buffer.from(good);
          bad[i]! ^= mask;
          putFile(name, bad);
          // Every byte of a small manifest is covered by a checksum or a header, and of CURRENT by its one format.
          expect(await openDamaged(`${name} byte ${i} ^ ${mask}`)).toBe('failed');
          tried++;
        }
      }
    }
    expect(tried).toBe(2 * (pristine.get(manifestName())!.length + pristine.get('CURRENT')!.length));
  });

  it('a cut of MANIFEST at every length opens with every write or fails with CorruptionError, changing nothing', async () => {
    const name = manifestName();
    const good = pristine.get(name)!;
    const outcomes = { failed: 0, opened: 0 };
    for (let length = 0; length < good.length; length++) {
      writeFiles(pristine);
      putFile(name, good.subarray(0, length));
      outcomes[await openDamaged(`${name} cut to ${length} bytes`)]++;
    }
    expect(outcomes.failed + outcomes.opened).toBe(good.length);
    // A cut inside the first edit loses the counters, one that drops a compaction finds its inputs gone, one that
    // drops a flush finds the WAL it retired gone; one that drops only the last edit (the trivial move) leaves an
    // older state that still holds everything.
    expect(outcomes.failed).toBeGreaterThan(0);
    expect(outcomes.opened).toBeGreaterThan(0);
  });
});
