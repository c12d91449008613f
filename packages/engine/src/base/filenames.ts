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
  let m = /^MANIFEST-(\d+)$/.exec(name);
  if (m) return { type: FileType.Manifest, number: Number(m[1]) };
  m = /^(\d+)\.(log|sst|dbtmp)$/.exec(name);
  if (!m) return undefined;
  const type = m[2] === 'log' ? FileType.Log : m[2] === 'sst' ? FileType.Table : FileType.Temp;
  return { type, number: Number(m[1]) };
}
