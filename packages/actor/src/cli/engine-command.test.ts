// `heapless engine ...` run as the real built command, in a child process.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Engine } from '@heapless/engine';
import { OffHeapMap } from '@heapless/offheap';
import { pack } from 'msgpackr';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const cli = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

function heapless(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** As `heapless`, without blocking this process's event loop (which a child's pipes need). */
function heaplessAsync(...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 }, (err, stdout, stderr) => {
      resolve({ status: err === null ? 0 : typeof err.code === 'number' ? err.code : null, stdout, stderr });
    });
  });
}

let root: string;
let dir: string;
const key = (i: number) => `k${String(i).padStart(4, '0')}`;

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'heapless-cli-engine-'));
  dir = join(root, 'db');
  const db = await Engine.open(dir);
  for (let i = 0; i < 500; i++) await db.put(key(i), `value ${i}`);
  await db.flush();
  for (let i = 500; i < 600; i++) await db.put(key(i), `value ${i}`);
  await db.put(new Uint8Array([0xff, 0]), new Uint8Array([1, 2]));
  await db.close();
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('heapless engine', () => {
  it('stats: levels and tables for people, and as JSON', () => {
    const text = heapless('engine', 'stats', dir);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^Level Files Size\(MiB\)$/m);
    expect(text.stdout).toMatch(/^L0 \d+\.sst \d+ bytes: entries=500 /m);
    const json = heapless('engine', 'stats', dir, '--json');
    expect(json.status).toBe(0);
    const parsed = JSON.parse(json.stdout) as { stats: { levels: { files: number }[] }; tables: unknown[] };
    expect(parsed.stats.levels[0]!.files).toBe(1);
    expect(parsed.tables).toHaveLength(1);
  });

  it('dump: entries in key order, bounded, as text or NDJSON (bytes that are not text in hex)', () => {
    const some = heapless('engine', 'dump', dir, '--start', key(10), '--limit', '3');
    expect(some.status).toBe(0);
    expect(some.stdout).toBe(`${key(10)} => value 10\n${key(11)} => value 11\n${key(12)} => value 12\n`);
    const all = heapless('engine', 'dump', dir, '--json');
    const lines = all.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, string>);
    expect(lines).toHaveLength(601);
    expect(lines[0]).toEqual({ key: key(0), value: 'value 0' });
    expect(lines[600]).toEqual({ keyHex: 'ff00', valueHex: '0102' });
  });

  it('verify: exit 0 when every checksum holds; 1 naming the file and offset of a flipped byte', () => {
    const good = heapless('engine', 'verify', dir, '--progress');
    expect(good.status).toBe(0);
    expect(good.stdout).toMatch(/every checksum holds/);
    expect(good.stderr).toMatch(/^verify 1\/\d+ /m);
    const table = readdirSync(dir).find((n) => n.endsWith('.sst'))!;
    const bytes = readFileSync(join(dir, table));
    bytes[4] = bytes[4]! ^ 1;
    writeFileSync(join(dir, table), bytes);
    const bad = heapless('engine', 'verify', dir);
    expect(bad.status).toBe(1);
    expect(bad.stdout).toContain(`damaged: ${join(dir, table)} at offset 0: `);
    expect(bad.stderr).toMatch(/^heapless: HEAPLESS_ERR_ENGINE_CORRUPTION: /);
    const json = JSON.parse(heapless('engine', 'verify', dir, '--json').stdout) as { ok: boolean };
    expect(json.ok).toBe(false);
  });

  it('verify: checks the map image of a map directory too, naming a damaged section', async () => {
    const mapDir = join(root, 'map');
    const map = await OffHeapMap.open<string, string>({ dir: mapDir });
    for (let i = 0; i < 2000; i++) map.set(key(i), `value ${i}`);
    await map.close();
    const good = heapless('engine', 'verify', mapDir);
    expect(good.status).toBe(0);
    expect(good.stdout).toMatch(/^ok {3}image {4}.*MAPIMAGE \(\d+ sections checked\)$/m);
    const path = join(mapDir, 'MAPIMAGE');
    const bytes = readFileSync(path);
    bytes[bytes.length - 50] = bytes[bytes.length - 50]! ^ 4;
    writeFileSync(path, bytes);
    const bad = heapless('engine', 'verify', mapDir);
    expect(bad.status).toBe(1);
    expect(bad.stdout).toMatch(new RegExp(`^damaged: ${path} at offset \\d+: section \\d+ \\(arena segment`, 'm'));
    const json = JSON.parse(heapless('engine', 'verify', mapDir, '--json').stdout) as {
      ok: boolean;
      image: { problems: unknown[] };
    };
    expect(json.ok).toBe(false);
    expect(json.image.problems).toHaveLength(1);
  });

  it("dump and stats of a map's directory: records under the user's keys, metadata apart; hex bounds", async () => {
    const mapDir = join(root, 'map');
    const map = await OffHeapMap.open<string, string>({ dir: mapDir });
    for (const k of ['h:1', 'user:1', 'user:2', 'z']) map.set(k, `v ${k}`);
    await map.meta.set('schema', Buffer.from('v7'));
    await map.close();
    const value = (k: string) => `0x${Buffer.from(pack(`v ${k}`)).toString('hex')}`;
    const all = heapless('engine', 'dump', mapDir);
    expect(all.status).toBe(0);
    expect(all.stdout).toBe(['h:1', 'user:1', 'user:2', 'z'].map((k) => `${k} => ${value(k)}\n`).join(''));
    const users = `user:1 => ${value('user:1')}\nuser:2 => ${value('user:2')}\n`;
    expect(heapless('engine', 'dump', mapDir, '--start', 'user:', '--end', 'user;').stdout).toBe(users);
    const hexBounds = ['--hex', '--start', Buffer.from('user:').toString('hex'), '--end', '75736572'.concat('3b')];
    expect(heapless('engine', 'dump', mapDir, ...hexBounds).stdout).toBe(users);
    const meta = heapless('engine', 'dump', mapDir, '--meta', '--json').stdout.trimEnd().split('\n');
    const parsed = meta.map((l) => JSON.parse(l) as Record<string, string>);
    expect(parsed).toContainEqual({ meta: 'meta', key: 'schema', value: 'v7' });
    expect(parsed.filter((p) => p.meta === 'map').map((p) => p.key)).toContain('meta');
    expect(heapless('engine', 'dump', mapDir, '--raw', '--limit', '1').stdout).toMatch(/^0x00/);
    expect(heapless('engine', 'dump', mapDir, '--raw').stdout).toMatch(/^0x01683a31 => /m);
    const stats = heapless('engine', 'stats', mapDir);
    expect(stats.stdout).toMatch(/^map: format 2, string keys, msgpack values$/m);
    expect(stats.stdout).toMatch(/^map metadata: schema$/m);
    const statsJson = JSON.parse(heapless('engine', 'stats', mapDir, '--json').stdout) as { map: unknown };
    expect(statsJson.map).toMatchObject({ meta: { keys: 'string', codec: 'msgpack' }, metaNames: ['schema'] });
    // Not a map's directory: the engine's keys as they are, hex bounds too; no map in stats; --meta refused.
    expect(heapless('engine', 'dump', dir, '--hex', '--start', 'ff').stdout).toBe('0xff00 => 0x0102\n');
    expect((JSON.parse(heapless('engine', 'stats', dir, '--json').stdout) as { map: unknown }).map).toBeNull();
    expect(heapless('engine', 'dump', dir, '--meta').status).toBe(2);
    expect(heapless('engine', 'dump', dir, '--hex', '--start', 'zz').stderr).toMatch(/even number of hex digits/);
  });

  it('compact, checkpoint and repair: each leaves a database that holds every entry', async () => {
    const compact = heapless('engine', 'compact', dir, '--json');
    expect(compact.status).toBe(0);
    expect((JSON.parse(compact.stdout) as { levels: { files: number }[] }).levels[0]!.files).toBe(0);

    const copy = join(root, 'copy');
    expect(heapless('engine', 'checkpoint', dir, copy).status).toBe(0);
    expect(heapless('engine', 'dump', copy).stdout.split('\n')).toHaveLength(602);

    for (const name of readdirSync(copy)) if (name.startsWith('MANIFEST-')) unlinkSync(join(copy, name));
    expect(heapless('engine', 'dump', copy).status).toBe(1);
    const repair = heapless('engine', 'repair', copy, '--progress');
    expect(repair.status).toBe(0);
    expect(repair.stdout).toMatch(/^\d+ tables, 601 entries, last sequence 601;/);
    expect(repair.stderr).toMatch(/^repair 0\/\d+ \d+\.(sst|log)$/m); // a line per file read
    expect(heapless('engine', 'dump', copy).stdout.split('\n')).toHaveLength(602);
  });

  it('refuses a directory that is not a database and leaves it as it was; repair keeps what it replaces', () => {
    const empty = join(root, 'empty');
    mkdirSync(empty);
    const refused = heapless('engine', 'repair', empty);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^heapless: HEAPLESS_ERR_ENGINE_NOT_FOUND: /);
    expect(readdirSync(empty)).toEqual([]);
    expect(heapless('engine', 'repair', empty, '--create').status).toBe(0);
    expect(readdirSync(empty)).toContain('CURRENT');
    expect(heapless('engine', 'compact', dir, '--create').stderr).toMatch(/--create is an option of repair/);

    const other = join(root, 'other');
    mkdirSync(other);
    writeFileSync(join(other, 'CURRENT'), 'garbage\n');
    writeFileSync(join(other, 'notes.txt'), 'notes');
    const before = readdirSync(other).sort();
    for (const sub of ['compact', 'stats', 'dump']) {
      const r = heapless('engine', sub, other);
      expect(r.status, sub).toBe(1);
      expect(r.stderr, sub).toMatch(/^heapless: HEAPLESS_ERR_ENGINE_CORRUPTION: /);
      expect(readdirSync(other).sort(), sub).toEqual(before);
    }
    expect(heapless('engine', 'checkpoint', other, join(root, 'cp')).status).toBe(1);
    expect(readdirSync(other).sort()).toEqual(before);
    const repaired = heapless('engine', 'repair', other, '--json');
    expect(repaired.status).toBe(0);
    expect(readFileSync(join(other, 'lost', 'CURRENT'), 'utf8')).toBe('garbage\n');

    // A checkpoint inside its own source is refused, as the map's is.
    const inside = heapless('engine', 'checkpoint', dir, join(dir, 'cp'));
    expect(inside.status).toBe(1);
    expect(inside.stderr).toMatch(/^heapless: HEAPLESS_ERR_ENGINE_INVALID_ARGUMENT: .*inside/);
    expect(readdirSync(dir)).not.toContain('cp');
  });

  it('fails with the error code: a directory held open (LOCKED), no database (NOT_FOUND), bad usage (exit 2)', async () => {
    const db = await Engine.open(dir);
    try {
      const locked = heapless('engine', 'compact', dir);
      expect(locked.status).toBe(1);
      expect(locked.stderr).toMatch(/^heapless: HEAPLESS_ERR_ENGINE_LOCKED: /);
      expect(heapless('engine', 'repair', dir).stderr).toMatch(/^heapless: HEAPLESS_ERR_ENGINE_LOCKED: /);
      expect(heapless('engine', 'checkpoint', dir, join(root, 'copy')).stderr).toMatch(
        /^heapless: HEAPLESS_ERR_ENGINE_LOCKED: /,
      );
    } finally {
      await db.close();
    }
    const missing = heapless('engine', 'stats', join(root, 'none'));
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/^heapless: HEAPLESS_ERR_ENGINE_NOT_FOUND: /);
    const usage = heapless('engine', 'frobnicate', dir);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toMatch(/unknown engine command frobnicate/);
    expect(usage.stderr).toMatch(/\nheapless engine --help lists its commands and options\n$/);
    expect(heapless('engine', 'dump').status).toBe(2);
    expect(heapless('engine', 'stats', dir, '--limit', '3').stderr).toMatch(/--limit is an option of dump/);
    expect(heapless('engine', '--help').stdout).toMatch(/^Usage: heapless engine/);
  });
});

/**
 * A writer in another process that holds `dir` open and writes until its stdin closes: atomic batches that add the
 * key k/<i> and set `count` to the number of k/ keys (every state it has keeps count == |k/*|), with small memtables
 * and tables so that it flushes often, and a compaction of the whole range every 150 batches (deleting tables).
 * After KEYS keys it rewrites them, each with its own value again: the directory stops growing, so that each round
 * of the test reads as much on a loaded machine, where rounds are slow, as on an idle one.
 */
const WRITER = `
import { Engine } from '@heapless/engine';
import { OffHeapMap } from '@heapless/offheap';
const db = await Engine.open(process.argv[1], { writeBufferSize: 16 * 1024, targetFileSize: 8 * 1024 });
let stop = false;
process.stdin.on('end', () => { stop = true; }).resume();
const KEYS = 3000;
for (let i = 0; !stop; i++) {
  const k = i % KEYS;
  await db.write([
    { type: 'put', key: 'k/' + String(k).padStart(6, '0'), value: 'v' + k + '-' + 'p'.repeat((k * 37) % 400) },
    { type: 'put', key: 'count', value: String(Math.min(i + 1, KEYS)) },
  ]);
  if (i === 200) process.stdout.write('ready\\n');
  if ((i + 1) % 150 === 0) await db.compactRange();
}
await db.close();
`;

describe('heapless engine beside a running writer', () => {
  it('stats, dump and verify read a directory another process holds open and writes, compacting', async () => {
    const live = join(root, 'live');
    const writer = spawn(process.execPath, ['--input-type=module', '-e', WRITER, live], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    writer.stderr.on('data', (d) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((resolve) => writer.on('exit', resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        writer.stdout.on('data', () => resolve());
        writer.on('exit', () => reject(new Error(`writer exited: ${stderr}`)));
      });
      let tablesChecked = 0;
      for (let round = 0; round < 4; round++) {
        const verify = await heaplessAsync('engine', 'verify', live, '--json');
        expect(verify.stderr).toBe('');
        expect(verify.status).toBe(0);
        const report = JSON.parse(verify.stdout) as { ok: boolean; files: { kind: string; skipped?: string }[] };
        expect(report.ok).toBe(true);
        // A round may meet only tables the writer is deleting (skipped); over the rounds, tables are checked.
        tablesChecked += report.files.filter((f) => f.kind === 'table' && f.skipped === undefined).length;

        const dump = await heaplessAsync('engine', 'dump', live, '--json');
        expect(dump.stderr).toBe('');
        expect(dump.status).toBe(0);
        const entries = dump.stdout
          .trimEnd()
          .split('\n')
          .map((l) => JSON.parse(l) as { key: string; value: string });
        // The view is a state the writer had: count keys k/000000.. with the values it wrote, nothing else.
        const count = Number(entries[0]!.value);
        expect(entries[0]!.key).toBe('count');
        expect(count).toBeGreaterThan(200);
        expect(entries.length).toBe(count + 1);
        entries.slice(1).forEach((e, i) => {
          expect(e).toEqual({ key: `k/${String(i).padStart(6, '0')}`, value: `v${i}-${'p'.repeat((i * 37) % 400)}` });
        });

        const stats = await heaplessAsync('engine', 'stats', live, '--json');
        expect(stats.status).toBe(0);
        const parsed = JSON.parse(stats.stdout) as { tables: unknown[] };
        expect(parsed.tables.length).toBeGreaterThan(0);
      }
      expect(tablesChecked).toBeGreaterThan(0);
      // The writer was still at it throughout.
      expect(writer.exitCode).toBeNull();
    } finally {
      writer.stdin.end();
      expect(await exited).toBe(0);
    }
    expect(stderr).toBe('');
  }, 60_000);
});

describe('heapless serve --config', () => {
  it('refuses an unknown key with a clear error and exit 2', () => {
    const config = join(root, 'heapless.json');
    writeFileSync(config, JSON.stringify({ engine: { blockCache: 0 } }));
    const r = heapless('serve', '--config', config, '--memory', '--port', '0');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(
      /engine\.blockCache: unknown engine option \(known: wal, periodicCompaction, blockCacheSize/,
    );
  });
});
