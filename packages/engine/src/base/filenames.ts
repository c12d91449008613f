/**
 * The names of the files in an engine directory, LevelDB style:
 *
 *   NNNNNN.log         write-ahead log of one memtable
 *   NNNNNN.sst         a table (the SSTable layer names them the same way)
 *   MANIFEST-NNNNNN    the log of version edits
 *   CURRENT            one line: the name of the live manifest, then a newline
 *   LOCK               held open and OS-locked by the engine that has the directory open (pid and host inside are
 *                      only for messages)
 *   NNNNNN.dbtmp       a temporary file (CURRENT being written), removed at open
 *
 * Every numbered file draws its number from the one counter the manifest keeps (`nextFileNumber`).
 */
import { join } from 'node:path';

export const CURRENT_FILE = 'CURRENT';
export const LOCK_FILE = 'LOCK';

export enum FileType {
  Log = 0,
  Table = 1,
  Manifest = 2,
  Current = 3,
  Lock = 4,
  Temp = 5,
}

function pad(n: number): string {
  return String(n).padStart(6, '0');
}

export function logFileName(dir: string, n: number): string {
  return join(dir, `${pad(n)}.log`);
}

export function tableFileName(dir: string, n: number): string {
  return join(dir, `${pad(n)}.sst`);
}

/** The manifest's base name (what CURRENT holds). */
export function manifestBaseName(n: number): string {
  return `MANIFEST-${pad(n)}`;
}

export function manifestFileName(dir: string, n: number): string {
  return join(dir, manifestBaseName(n));
}

export function tempFileName(dir: string, n: number): string {
  return join(dir, `${pad(n)}.dbtmp`);
}

/** What a directory entry is, and its number; undefined for files that are not the engine's. */
export function parseFileName(name: string): { type: FileType; number: number } | undefined {
  if (name === CURRENT_FILE) return { type: FileType.Current, number: 0 };
  if (name === LOCK_FILE) return { type: FileType.Lock, number: 0 };
  // By hand rather than by regular expression: open parses every name in the directory (one per table) several
  // times over, and this is on that path.
  if (name.startsWith(MANIFEST_PREFIX)) {
    const end = digitsEnd(name, MANIFEST_PREFIX.length);
    if (end === MANIFEST_PREFIX.length || end !== name.length) return undefined;
    return { type: FileType.Manifest, number: Number(name.slice(MANIFEST_PREFIX.length)) };
  }
  const dot = digitsEnd(name, 0);
  if (dot === 0 || name.charCodeAt(dot) !== 0x2e /* . */) return undefined;
  const ext = name.slice(dot + 1);
  const type =
    ext === 'log' ? FileType.Log : ext === 'sst' ? FileType.Table : ext === 'dbtmp' ? FileType.Temp : undefined;
  if (type === undefined) return undefined;
  return { type, number: Number(name.slice(0, dot)) };
}

const MANIFEST_PREFIX = 'MANIFEST-';

/** The index of the first non-digit of `name` at or after `from` (its length if there is none). */
function digitsEnd(name: string, from: number): number {
  let i = from;
  while (i < name.length) {
    const c = name.charCodeAt(i);
    if (c < 0x30 || c > 0x39) break;
    i++;
  }
  return i;
}

/** One of the engine's files in a directory listing: its name, type and number. */
export interface ListedFile {
  readonly name: string;
  readonly type: FileType;
  readonly number: number;
}

/**
 * The engine's files among `names` (a directory listing), parsed once: open makes several passes over them (the
 * manifest's check, the logs to replay, the obsolete files), and a listing holds a name per table.
 */
export function parseListing(names: readonly string[]): ListedFile[] {
  const out: ListedFile[] = [];
  for (const name of names) {
    const f = parseFileName(name);
    if (f !== undefined) out.push({ name, type: f.type, number: f.number });
  }
  return out;
}
