/**
 * The manifest of a checkpoint in the object store (FORMAT.md, "Checkpoints"): which files it holds, with their
 * sizes and SHA-256, and the stream position and schema id the files are at. Also the object names a checkpoint
 * is stored under, and the checks that make a hostile or damaged manifest a CHECKPOINT_CORRUPT error rather than a
 * file written outside the destination.
 */

import { isSchemaId } from '../change/change-format.js';
import { checkPosition } from '../change/change-stream.js';
import { ReplicaError } from '../errors.js';
import { type FileEncoding, LZ4_FRAMES } from './checkpoint-frames.js';

/** The manifest format this package writes. */
export const MANIFEST_FORMAT = 2;
/** The formats it reads: 1 (every object holds its file as it is) and 2 (a file may be stored encoded). */
const READ_FORMATS: readonly number[] = [1, 2];
/** Every checkpoint object's name starts with this. */
export const CHECKPOINT_PREFIX = 'checkpoints/';
/** The manifest object's name within a checkpoint; written last, so a listed checkpoint is complete. */
const MANIFEST_NAME = 'manifest.json';
/** The folder of the file objects within a checkpoint. */
const FILES_FOLDER = 'files/';
/** Digits of the position in an id: 2^53 has 16, so ids sort by position as text. */
const POSITION_DIGITS = 16;
/** `<16-digit position>-<unique suffix>`. */
const ID = /^(\d{16})-([A-Za-z0-9]{1,64})$/;
/** A manifest is small (a line per file); anything larger is not one. */
export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

/** One file of a checkpoint. */
export interface CheckpointFile {
  /** Path relative to the checkpoint's directory, with `/` between folders. */
  readonly path: string;
  readonly size: number;
  /** SHA-256 of the file's bytes, lower-case hex. */
  readonly sha256: string;
  /** How the object holds the file (format 2); absent: its bytes as they are. */
  readonly encoding?: FileEncoding;
  /** The object's size and SHA-256 (lower-case hex) when the file is stored encoded. */
  readonly storedSize?: number;
  readonly storedSha256?: string;
}

/** What a checkpoint holds, as stored in its manifest object. */
export interface CheckpointManifest {
  readonly format: number;
  /** `<position>-<unique suffix>`: unique in the bucket, sorting by position. */
  readonly id: string;
  /** The schema id of the values in the checkpoint. */
  readonly schema: string;
  /** The stream position the files are at: a follower continues at `position + 1`. */
  readonly position: number;
  /** The change stream the position belongs to, when the publisher named it. */
  readonly stream: string | undefined;
  /** When it was uploaded (ISO 8601). */
  readonly createdAt: string;
  readonly files: readonly CheckpointFile[];
  /** The sum of the files' sizes. */
  readonly totalBytes: number;
}

/** The id of a new checkpoint at `position`. */
export function checkpointId(position: number, unique: string): string {
  checkPosition(position);
  return `${String(position).padStart(POSITION_DIGITS, '0')}-${unique}`;
}

/** The object name of a checkpoint's manifest. */
export function manifestObject(schema: string, id: string): string {
  return `${CHECKPOINT_PREFIX}${schema}/${id}/${MANIFEST_NAME}`;
}

/** The object name of one file of a checkpoint. */
export function fileObject(schema: string, id: string, path: string): string {
  return `${CHECKPOINT_PREFIX}${schema}/${id}/${FILES_FOLDER}${path}`;
}

/** The prefix of every object of one checkpoint. */
export function checkpointObjects(schema: string, id: string): string {
  return `${CHECKPOINT_PREFIX}${schema}/${id}/`;
}

/** Schema, id and position of a manifest object's name, or undefined for any other object. */
export function parseManifestObject(name: string): { schema: string; id: string; position: number } | undefined {
  if (!name.startsWith(CHECKPOINT_PREFIX) || !name.endsWith(`/${MANIFEST_NAME}`)) return undefined;
  const parts = name.slice(CHECKPOINT_PREFIX.length, -MANIFEST_NAME.length - 1).split('/');
  if (parts.length !== 2) return undefined;
  const [schema, id] = parts as [string, string];
  const m = ID.exec(id);
  if (!isSchemaId(schema) || m === null) return undefined;
  const position = Number(m[1]);
  return Number.isSafeInteger(position) ? { schema, id, position } : undefined;
}

/** The manifest's bytes: JSON, one file per line so that a person can read it. */
export function encodeManifest(manifest: CheckpointManifest): Uint8Array {
  return Buffer.from(`${JSON.stringify(manifest, null, 1)}\n`);
}

/**
 * Reads and checks a manifest stored under `expected` (schema and id from its object name). Throws
 * CHECKPOINT_CORRUPT when it is not JSON, misses or mistypes a field, disagrees with its name, names a path that
 * could leave the destination directory (absolute, `..`, `\`, empty segments, control characters), names a path
 * twice, or its sizes do not add up.
 */
export function decodeManifest(bytes: Uint8Array, expected: { schema: string; id: string }): CheckpointManifest {
  const where = manifestObject(expected.schema, expected.id);
  const corrupt = (why: string) =>
    new ReplicaError('HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT', `manifest ${where}: ${why}`);
  if (bytes.length > MAX_MANIFEST_BYTES) throw corrupt(`${bytes.length} bytes, a manifest has at most 4 MiB`);
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (err) {
    throw corrupt(`not JSON (${(err as Error).message})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw corrupt('not a JSON object');
  const m = raw as Record<string, unknown>;
  const format = m.format;
  if (typeof format !== 'number' || !READ_FORMATS.includes(format))
    throw corrupt(`format ${JSON.stringify(format)}, not one of ${READ_FORMATS.join(', ')}`);
  if (m.id !== expected.id) throw corrupt(`id ${JSON.stringify(m.id)} under the name of ${expected.id}`);
  if (m.schema !== expected.schema) throw corrupt(`schema ${JSON.stringify(m.schema)} under ${expected.schema}`);
  const position = m.position;
  if (!isCount(position) || Number(expected.id.slice(0, POSITION_DIGITS)) !== position)
    throw corrupt(`position ${JSON.stringify(position)} disagrees with id ${expected.id}`);
  if (m.stream !== undefined && typeof m.stream !== 'string') throw corrupt('stream is not a string');
  if (typeof m.createdAt !== 'string' || Number.isNaN(Date.parse(m.createdAt)))
    throw corrupt('createdAt is not a date');
  if (!Array.isArray(m.files)) throw corrupt('files is not an array');
  const seen = new Set<string>();
  let total = 0;
  const files = m.files.map((f: unknown, i: number): CheckpointFile => {
    if (typeof f !== 'object' || f === null) throw corrupt(`files[${i}] is not an object`);
    const { path, size, sha256, encoding, storedSize, storedSha256 } = f as Record<string, unknown>;
    if (typeof path !== 'string' || !isSafePath(path))
      throw corrupt(`files[${i}] has an unsafe path ${JSON.stringify(path)}`);
    if (seen.has(path)) throw corrupt(`files[${i}] names ${path} a second time`);
    seen.add(path);
    if (!isCount(size)) throw corrupt(`files[${i}] (${path}) has size ${JSON.stringify(size)}`);
    if (!isSha256(sha256)) throw corrupt(`files[${i}] (${path}) has no SHA-256 in hex`);
    total += size;
    if (encoding === undefined) {
      if (storedSize !== undefined || storedSha256 !== undefined)
        throw corrupt(`files[${i}] (${path}) has a storedSize or storedSha256 but no encoding`);
      return { path, size, sha256 };
    }
    if (format < 2 || encoding !== LZ4_FRAMES)
      throw corrupt(`files[${i}] (${path}) has encoding ${JSON.stringify(encoding)} in a format ${format} manifest`);
    if (!isCount(storedSize)) throw corrupt(`files[${i}] (${path}) has storedSize ${JSON.stringify(storedSize)}`);
    if (!isSha256(storedSha256)) throw corrupt(`files[${i}] (${path}) has no storedSha256 in hex`);
    return { path, size, sha256, encoding, storedSize, storedSha256 };
  });
  if (m.totalBytes !== total) throw corrupt(`totalBytes ${JSON.stringify(m.totalBytes)}, the files add up to ${total}`);
  return {
    format,
    id: expected.id,
    schema: expected.schema,
    position: position as number,
    stream: m.stream as string | undefined,
    createdAt: m.createdAt,
    files,
    totalBytes: total,
  };
}

/**
 * Whether `path` stays inside the directory it is relative to, on every platform: relative, `/`-separated,
 * without empty, `.` or `..` segments, backslashes, colons (drive letters, streams) or control characters.
 */
export function isSafePath(path: string): boolean {
  if (path.length === 0 || path.length > 1024) return false;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses.
  if (/[\\:\u0000-\u001f\u007f]/.test(path)) return false;
  return path.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..');
}

function isSha256(v: unknown): v is string {
  return typeof v === 'string' && /^[0-9a-f]{64}$/.test(v);
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}
