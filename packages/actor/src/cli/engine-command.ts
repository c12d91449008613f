/**
 * `heapless engine stats|dump|verify|compact|repair|checkpoint DIR`: the engine's tools for operators (LevelDB's
 * `ldb`, RocksDB's `sst_dump`). Each subcommand writes its result to stdout (text for people, or `--json`), progress
 * to stderr, and returns the exit status: 0, or 1 when it found damage (verify). Failures are thrown; the command's
 * main prints their code and message and exits 1.
 *
 * stats, dump and verify only read, so they work on a directory a running server holds open: stats and dump through
 * the engine's read-only open (no lock; the state as of the open), verify without opening at all. compact, repair
 * and checkpoint write, so they take the directory's lock, and a directory held open is refused with LOCKED.
 * None of them takes a directory that is not a database for one: they refuse it (NOT_FOUND; repair, whose job is a
 * damaged database, accepts any directory holding one of the engine's files, or any with --create), and one that
 * fails leaves no file behind (repair keeps in lost/ whatever it replaces).
 */
import { Engine, repairDatabase, type TableInfo, verifyDatabase } from '@heapless/engine';
import type { CommandIo } from './command-io.js';
import type { EngineArgs } from './engine-args.js';
import { dumpEntries } from './engine-dump.js';

/** JSON with byte arrays (table key ranges) as hex strings. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v));
}

/** Runs `args` (see the top of the file); resolves to the exit status. Rejects with the engine's error. */
export async function runEngineCommand(args: EngineArgs, io: CommandIo): Promise<number> {
  const progress = args.progress ? (line: string) => io.err(`${line}\n`) : () => {};
  switch (args.sub) {
    case 'verify':
      return verify(args, io, progress);
    case 'repair': {
      progress(`repairing ${args.dir}`);
      const report = await repairDatabase(args.dir, {
        onProgress: (done, total, file) => progress(`repair ${done}/${total} ${file}`),
        createIfMissing: args.create,
      });
      if (args.json) io.out(`${toJson(report)}\n`);
      else {
        io.out(
          `${report.tables} tables${report.merged ? ' (merged into one sorted run)' : ''}, ${report.entries} entries, ` +
            `last sequence ${report.lastSequence}; ` +
            `${report.logs} logs replayed (${report.logRecords} records)\n`,
        );
        for (const l of report.lost) io.out(`moved to lost/: ${l.file} (${l.reason})\n`);
      }
      return 0;
    }
    default:
      break;
  }
  const reads = args.sub === 'stats' || args.sub === 'dump';
  const engine = await Engine.open(args.dir, reads ? { readOnly: true } : { createIfMissing: false });
  try {
    switch (args.sub) {
      case 'stats':
        await stats(engine, args, io);
        break;
      case 'dump':
        await dumpEntries(engine, args, io, progress);
        break;
      case 'compact': {
        const before = engine.property('heapless.levelstats');
        progress(`compacting ${args.dir}`);
        // Once a second while it runs: the compactions done and the bytes they wrote so far.
        const ticker = setInterval(() => {
          const s = engine.stats();
          progress(`compacting: ${s.compactions} compactions, ${mib(s.compactionBytesWritten)} MiB written`);
        }, PROGRESS_MS);
        try {
          await engine.compactRange();
        } finally {
          clearInterval(ticker);
        }
        const s = engine.stats();
        if (args.json) io.out(`${toJson({ levels: s.levels, compactions: s.compactions })}\n`);
        else io.out(`before:\n${before}after:\n${engine.property('heapless.levelstats')}`);
        break;
      }
      case 'checkpoint': {
        progress(`checkpoint of ${args.dir} into ${args.target}`);
        await engine.checkpoint(args.target!);
        if (args.json) io.out(`${toJson({ checkpoint: args.target })}\n`);
        else io.out(`checkpoint written to ${args.target}\n`);
        break;
      }
    }
  } finally {
    await engine.close();
  }
  return 0;
}

/** How often a long subcommand without steps of its own says how far it got. */
const PROGRESS_MS = 1000;

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/**
 * The engine's figures and tables; in a map's directory also the map's metadata (`map`: how its keys and values are
 * encoded, and the names of its user's metadata values; JSON `map: null` elsewhere).
 */
async function stats(engine: Engine, args: EngineArgs, io: CommandIo): Promise<void> {
  const tables: TableInfo[] = engine.tableProperties();
  const map = await mapSummary(engine);
  if (args.json) {
    io.out(`${toJson({ stats: engine.stats(), tables, map: map ?? null })}\n`);
    return;
  }
  if (map !== undefined) {
    const { format, keys, codec, struct } = map.meta;
    io.out(`map: format ${format}, ${keys} keys, ${codec} values${struct === null ? '' : ` (struct ${struct})`}\n`);
    io.out(`map metadata: ${map.metaNames.length === 0 ? 'none' : map.metaNames.join(', ')}\n\n`);
  }
  io.out(engine.property('heapless.levelstats') ?? '');
  io.out('\n');
  io.out(engine.property('heapless.stats') ?? '');
  io.out('\ntables:\n');
  io.out(engine.property('heapless.table-properties') ?? '');
}

/** A map's metadata and the names of its user's metadata values, when `engine` holds a map's directory. */
async function mapSummary(engine: Engine) {
  const { readMapMeta, mapEngineKey, MAP_RECORD_RANGE } = await import('@heapless/offheap');
  const meta = readMapMeta(engine);
  if (meta === undefined) return undefined;
  const metaNames: string[] = [];
  for await (const [k] of engine.iterator({ gte: MAP_RECORD_RANGE.lt, values: false })) {
    const what = mapEngineKey(k);
    if (what?.kind === 'user-meta') metaNames.push(Buffer.from(what.name).toString('utf8'));
  }
  return { meta, metaNames };
}

async function verify(args: EngineArgs, io: CommandIo, progress: (line: string) => void): Promise<number> {
  const engine = await verifyDatabase(args.dir, {
    onProgress: (done, total, file) => progress(`verify ${done}/${total} ${file}`),
  });
  // A map's directory also holds its image, whose checksums are checked too (a bad one costs open time, not data).
  const { verifyMapImage } = await import('@heapless/offheap');
  const image = verifyMapImage(args.dir);
  const problems = [...engine.problems, ...(image?.problems ?? [])];
  const ok = problems.length === 0;
  if (args.json) io.out(`${toJson({ ...engine, ok, problems, image: image ?? null })}\n`);
  else {
    for (const f of engine.files) {
      const bad = engine.problems.filter((p) => p.file === f.file);
      const unit = f.kind === 'table' ? 'blocks' : 'records';
      if (f.skipped !== undefined) io.out(`skip ${f.kind.padEnd(8)} ${f.file} (${f.skipped})\n`);
      else
        io.out(`${bad.length === 0 ? 'ok  ' : 'BAD '} ${f.kind.padEnd(8)} ${f.file} (${f.checked} ${unit} checked)\n`);
    }
    if (image !== undefined)
      io.out(
        `${image.problems.length === 0 ? 'ok  ' : 'BAD '} ${'image'.padEnd(8)} ${image.file} (${image.checked} sections checked)\n`,
      );
    for (const p of problems) io.out(`damaged: ${p.file} at offset ${p.offset}: ${p.message}\n`);
    io.out(ok ? 'every checksum holds\n' : `${problems.length} problems found\n`);
  }
  if (!ok) io.err(`heapless: HEAPLESS_ERR_ENGINE_CORRUPTION: ${problems.length} damaged places in ${args.dir}\n`);
  return ok ? 0 : 1;
}
