/**
 * A version edit: the change one flush or compaction makes to the set of live tables, plus the counters that must
 * recover exactly. The manifest is a log (record-format.ts) whose records are encoded edits (FORMAT.md "Manifest"):
 *
 *   edit  = field*
 *   field = tag varint | payload
 *     2  logNumber       varint          WAL files numbered below this are no longer needed
 *     3  nextFileNumber  varint
 *     4  lastSequence    varint
 *     6  deletedFile     varint level | varint fileNumber
 *     7  newFile         varint level | varint fileNumber | varint fileSize | varint entries |
 *                        varint smallestLength | smallest internal key | varint largestLength | largest internal key
 *
 * Tags follow LevelDB's numbering where the meaning is the same; varints are varint64s (base/coding.ts): LEB128 of up
 * to 8 bytes, values below 2^53.
 */
import { getVarint64, MAX_VARINT64_LENGTH, putVarint64 } from '../base/coding.js';
import { CorruptionError } from '../base/errors.js';

/** A table as the manifest knows it. Immutable once made. */
export interface FileMetaData {
  readonly number: number;
  readonly size: number;
  readonly entries: number;
  /** Smallest and largest internal keys in the table. */
  readonly smallest: Uint8Array;
  readonly largest: Uint8Array;
}

export const Tag = {
  LogNumber: 2,
  NextFileNumber: 3,
  LastSequence: 4,
  DeletedFile: 6,
  NewFile: 7,
} as const;

export class VersionEdit {
  logNumber: number | undefined;
  nextFileNumber: number | undefined;
  lastSequence: number | undefined;
  /** Tables removed, as [level, file number]. */
  readonly deletedFiles: Array<[level: number, number: number]> = [];
  readonly newFiles: Array<[level: number, file: FileMetaData]> = [];

  deleteFile(level: number, number: number): void {
    this.deletedFiles.push([level, number]);
  }

  addFile(level: number, file: FileMetaData): void {
    this.newFiles.push([level, file]);
  }

  /** The edit's encoding (see the layout above). */
  encode(): Uint8Array {
    // Every field's tag and numbers are varint64s of at most MAX_VARINT64_LENGTH bytes.
    let size = 3 * 2 * MAX_VARINT64_LENGTH;
    for (const [, f] of this.newFiles) size += 7 * MAX_VARINT64_LENGTH + f.smallest.length + f.largest.length;
    size += this.deletedFiles.length * 3 * MAX_VARINT64_LENGTH;
    const out = new Uint8Array(size);
    let at = 0;
    if (this.logNumber !== undefined) at = putVarint64(out, putVarint64(out, at, Tag.LogNumber), this.logNumber);
    if (this.nextFileNumber !== undefined) {
      at = putVarint64(out, putVarint64(out, at, Tag.NextFileNumber), this.nextFileNumber);
    }
    if (this.lastSequence !== undefined)
      at = putVarint64(out, putVarint64(out, at, Tag.LastSequence), this.lastSequence);
    for (const [level, number] of this.deletedFiles) {
      at = putVarint64(out, putVarint64(out, putVarint64(out, at, Tag.DeletedFile), level), number);
    }
    for (const [level, f] of this.newFiles) {
      at = putVarint64(out, at, Tag.NewFile);
      at = putVarint64(out, at, level);
      at = putVarint64(out, at, f.number);
      at = putVarint64(out, at, f.size);
      at = putVarint64(out, at, f.entries);
      at = putVarint64(out, at, f.smallest.length);
      out.set(f.smallest, at);
      at = putVarint64(out, at + f.smallest.length, f.largest.length);
      out.set(f.largest, at);
      at += f.largest.length;
    }
    return out.subarray(0, at);
  }

  /** Decodes an edit read from `file` at `offset`. Throws CorruptionError on any malformed field. */
  static decode(bytes: Uint8Array, file: string, offset: number): VersionEdit {
    const edit = new VersionEdit();
    // One copy of the record, which the files' smallest and largest keys are views of: the record is a view of the
    // log's bytes, which they must not keep alive, and a copy per key costs an allocation per key at every open.
    const r = new Reader(bytes.slice(), file, offset);
    while (!r.done()) {
      const tag = r.varint();
      switch (tag) {
        case Tag.LogNumber:
          edit.logNumber = r.varint();
          break;
        case Tag.NextFileNumber:
          edit.nextFileNumber = r.varint();
          break;
        case Tag.LastSequence:
          edit.lastSequence = r.varint();
          break;
        case Tag.DeletedFile: {
          const level = r.varint();
          edit.deletedFiles.push([level, r.varint()]);
          break;
        }
        case Tag.NewFile: {
          const level = r.varint();
          const number = r.varint();
          const size = r.varint();
          const entries = r.varint();
          const smallest = r.bytes();
          const largest = r.bytes();
          edit.newFiles.push([level, { number, size, entries, smallest, largest }]);
          break;
        }
        default:
          throw new CorruptionError(file, offset, `unknown version edit tag ${tag}`);
      }
    }
    return edit;
  }
}

class Reader {
  private readonly pos = new Int32Array(1);
  constructor(
    private readonly buf: Uint8Array,
    private readonly file: string,
    private readonly offset: number,
  ) {}

  done(): boolean {
    return this.pos[0]! >= this.buf.length;
  }

  varint(): number {
    const v = getVarint64(this.buf, this.pos, this.buf.length);
    if (v < 0) throw new CorruptionError(this.file, this.offset, 'bad varint in version edit');
    return v;
  }

  bytes(): Uint8Array {
    const n = this.varint();
    const at = this.pos[0]!;
    if (at + n > this.buf.length) throw new CorruptionError(this.file, this.offset, 'truncated key in version edit');
    this.pos[0] = at + n;
    return this.buf.subarray(at, at + n);
  }
}
