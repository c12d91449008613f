// The engine's data-driven cases: each file of ./testdata/ is a session against one database directory, read as
// commands and the output each must print (see ./data-driven.ts; HEAPLESS_REWRITE=1 rewrites
// the outputs).
//
//   open [option=value...]        opens a fresh directory (options as EngineOptions: numbers, true/false, names);
//                                 background compaction is off unless level0CompactionTrigger is given
//   reopen [option=value...]      closes and opens the same directory, with the options of the last open plus these
//   close                         closes the engine (later commands use the closed engine: CLOSED errors)
//   try-open [dir=D] [option=...] opens the directory (or its subdirectory D) a second time, and closes it -> ok
//   put K V / delete K            one write                                 -> ok
//   batch                         the input lines (put K V / delete K) as one atomic write -> ok
//   get K [snapshot=S]            the value, or "not found"
//   snapshot S / release S        takes or releases a named snapshot        -> ok
//   flush / compact [K1 [K2]]     Engine.flush / Engine.compactRange         -> ok
//   levels                        Engine.debugLevels(): the tables per level
//   tables                        TableReader.debugDump({ entries: true }) of every table of the current version
//   files                         the directory's file names (after a close: obsolete files are gone by then)
//   iter [gt= gte= lt= lte= limit= reverse snapshot=S keys=false values=false]
//                                 without input: every entry, `k=v` a line; with input lines, one step each:
//                                 next | nextv N | seek K | into BYTES (nextvInto, entries decoded), one output line each
//   stats                         counters that do not depend on timing
//
// Keys and values are ASCII words; `-` is the empty value.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENTRY_HEADER_SIZE, Engine, type EngineIterator, type EngineOptions, type Snapshot } from '@heapless/engine';
import { afterAll, describe, expect, it } from 'vitest';
import { TableReader } from '../src/table/table-reader.js';
import { type DataCase, runDataFile } from './data-driven.js';

const DATA = new URL('./testdata/', import.meta.url);
const enc = new TextEncoder();
const dec = new TextDecoder();
const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

// Compaction happens when a case asks for it, so that `levels` prints what the commands did.
const QUIET: EngineOptions = { level0CompactionTrigger: 1000, level0SlowdownTrigger: 1000, level0StopTrigger: 1000 };

function parseOptions(kv: Record<string, string>): EngineOptions {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(kv))
    out[k] = v === 'true' ? true : v === 'false' ? false : /^\d+$/.test(v) ? Number(v) : v;
  return out as EngineOptions;
}

const word = (b: Uint8Array) => (b.length === 0 ? '-' : dec.decode(b));
const bytes = (w: string) => enc.encode(w === '-' ? '' : w);

/** One file's state: a directory, the engine open on it, its named snapshots. */
class Session {
  readonly dir = mkdtempSync(join(tmpdir(), 'heapless-dd-'));
  private db: Engine | undefined;
  private options: EngineOptions = {};
  private readonly snapshots = new Map<string, Snapshot>();

  constructor() {
    roots.push(this.dir);
  }

  private get engine(): Engine {
    if (this.db === undefined) throw new Error('no engine open: use open');
    return this.db;
  }

  private snapshot(c: DataCase): Snapshot | undefined {
    const name = c.kv.snapshot;
    if (name === undefined) return undefined;
    const s = this.snapshots.get(name);
    if (s === undefined) throw new Error(`no snapshot ${name}`);
    return s;
  }

  /**
   * Runs one case; the directory's path reads `<dir>` and a process id `pid <pid>` in outputs and errors, so that they
   * do not depend on the run.
   */
  async run(c: DataCase): Promise<string> {
    try {
      return (await this.command(c)).replaceAll(this.dir, '<dir>').replace(/pid \d+/g, 'pid <pid>');
    } catch (err) {
      if (err instanceof Error)
        err.message = err.message.replaceAll(this.dir, '<dir>').replace(/pid \d+/g, 'pid <pid>');
      throw err;
    }
  }

  private async command(c: DataCase): Promise<string> {
    const [a, b] = c.args;
    switch (c.cmd) {
      case 'open':
        this.options = { ...QUIET, ...parseOptions(c.kv) };
        this.db = await Engine.open(this.dir, this.options);
        return 'ok';
      case 'reopen':
        await this.close();
        this.options = { ...this.options, ...parseOptions(c.kv) };
        this.db = await Engine.open(this.dir, this.options);
        return 'ok';
      case 'close':
        await this.close();
        return 'ok';
      case 'try-open': {
        const { dir, ...options } = c.kv;
        const other = await Engine.open(dir === undefined ? this.dir : join(this.dir, dir), parseOptions(options));
        await other.close();
        return 'ok';
      }
      case 'put':
        await this.engine.put(a!, bytes(b!));
        return 'ok';
      case 'delete':
        await this.engine.delete(a!);
        return 'ok';
      case 'batch': {
        const batch = this.engine.batch();
        for (const line of c.input.split('\n')) {
          const [op, k, v] = line.split(' ');
          if (op === 'put') batch.put(k!, bytes(v!));
          else if (op === 'delete') batch.del(k!);
          else throw new Error(`batch: unknown operation ${op}`);
        }
        await batch.write();
        return 'ok';
      }
      case 'get': {
        const v = this.engine.getSync(a!, { snapshot: this.snapshot(c) });
        return v === undefined ? 'not found' : word(v);
      }
      case 'snapshot':
        this.snapshots.set(a!, this.engine.snapshot());
        return 'ok';
      case 'release':
        this.snapshots.get(a!)?.release(); // kept under its name: reading through it shows the error
        return 'ok';
      case 'flush':
        await this.engine.flush();
        return 'ok';
      case 'compact':
        await this.engine.compactRange(a, b);
        return 'ok';
      case 'levels': {
        const lines = this.engine.debugLevels();
        return lines.length === 0 ? '(no tables)' : lines.join('\n');
      }
      case 'tables':
        return this.tables();
      case 'files':
        return readdirSync(this.dir).sort().join('\n');
      case 'iter':
        return this.iter(c);
      case 'stats': {
        const s = this.engine.stats();
        const levels = s.levels.map((l, i) => (l.files > 0 ? `L${i}=${l.files}` : '')).filter((x) => x !== '');
        return [
          `levels: ${levels.join(' ') || '-'}`,
          `flushes=${s.flushes} compactions=${s.compactions} trivialMoves=${s.trivialMoves}`,
          `lastSequence=${s.lastSequence} immutableMemtables=${s.immutableMemtables} liveSnapshots=${s.liveSnapshots} openIterators=${s.openIterators}`,
        ].join('\n');
      }
      default:
        throw new Error(`unknown command ${c.cmd}`);
    }
  }

  /** The dumps of the current version's tables, level by level (not of the directory: obsolete ones may linger). */
  private tables(): string {
    const out: string[] = [];
    for (const line of this.engine.debugLevels()) {
      for (const m of line.matchAll(/(\d+)\[/g)) {
        const number = Number(m[1]);
        const name = `${String(number).padStart(6, '0')}.sst`;
        const r = TableReader.open(join(this.dir, name), { fileNumber: number });
        try {
          out.push(
            `${line.slice(0, line.indexOf(':'))} ${r.debugDump({ entries: true }).replace(join(this.dir, name), name)}`,
          );
        } finally {
          r.close();
        }
      }
    }
    return out.length === 0 ? '(no tables)' : out.join('\n');
  }

  private iter(c: DataCase): string {
    const kv = c.kv;
    const it = this.engine.iterator({
      gt: kv.gt,
      gte: kv.gte,
      lt: kv.lt,
      lte: kv.lte,
      limit: kv.limit === undefined ? undefined : kv.limit === 'NaN' ? Number.NaN : Number(kv.limit),
      reverse: c.args.includes('reverse'),
      keys: kv.keys !== 'false',
      values: kv.values !== 'false',
      snapshot: this.snapshot(c),
    });
    const show = ([k, v]: [Uint8Array, Uint8Array]) => `${word(k)}=${word(v)}`;
    try {
      if (c.input === '') return it.nextvSync(Number.POSITIVE_INFINITY).map(show).join('\n') || '(none)';
      return c.input
        .split('\n')
        .map((step) => `${step}: ${this.step(it, step, show)}`)
        .join('\n');
    } finally {
      it.closeSync();
    }
  }

  private step(it: EngineIterator, step: string, show: (e: [Uint8Array, Uint8Array]) => string): string {
    const [op, arg] = step.split(' ');
    switch (op) {
      case 'next': {
        const e = it.nextSync();
        return e === undefined ? '(end)' : show(e);
      }
      case 'nextv': {
        const batch = it.nextvSync(Number(arg));
        return batch.length === 0 ? '(end)' : batch.map(show).join(' ');
      }
      case 'seek':
        it.seek(arg!);
        return 'ok';
      case 'into': {
        const buf = new Uint8Array(Number(arg));
        const end = it.nextvInto(buf);
        if (end < 0) return `needs ${-end} bytes`;
        if (end === 0) return '(end)';
        const view = new DataView(buf.buffer);
        const entries: string[] = [];
        for (let p = 0; p < end; ) {
          const kl = view.getUint32(p, true);
          const vl = view.getUint32(p + 4, true);
          const k = buf.subarray(p + ENTRY_HEADER_SIZE, p + ENTRY_HEADER_SIZE + kl);
          entries.push(show([k, buf.subarray(p + ENTRY_HEADER_SIZE + kl, p + ENTRY_HEADER_SIZE + kl + vl)]));
          p += ENTRY_HEADER_SIZE + kl + vl;
        }
        return entries.join(' ');
      }
      default:
        throw new Error(`unknown iterator step ${op}`);
    }
  }

  /** Closes the engine, which stays the session's: later commands meet the closed engine. Idempotent. */
  async close(): Promise<void> {
    this.snapshots.clear();
    await this.db?.close();
  }
}

describe('engine data-driven cases', () => {
  const files = readdirSync(DATA)
    .filter((f) => f.endsWith('.txt'))
    .sort();
  it('has cases', () => expect(files.length).toBeGreaterThan(0));
  for (const file of files) {
    it(file, async () => {
      const session = new Session();
      try {
        expect(await runDataFile(join(DATA.pathname, file), (c) => session.run(c))).toBe('');
      } finally {
        await session.close();
      }
    });
  }
});
