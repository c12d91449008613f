/**
 * The properties block of a table (FORMAT.md "Properties block"): a block, restart interval 1, of ASCII names in
 * bytewise order mapped to varints, raw bytes or ASCII text. One list of names serves the builder and the reader.
 */
import { getVarint64, MAX_VARINT64_LENGTH, putVarint64 } from '../base/coding.js';
import { CorruptionError } from '../base/errors.js';
import type { Block } from './block.js';
import { BlockBuilder } from './block-builder.js';
import { BlockIterator } from './block-iterator.js';

/** What the table's properties block records. */
export interface TableProperties {
  entries: number;
  deletions: number;
  dataBlocks: number;
  /** Bytes of the data blocks, with their trailers. */
  dataSize: number;
  indexSize: number;
  filterSize: number;
  /** Sum of the internal keys' and of the values' lengths, before prefix compression and block compression. */
  rawKeySize: number;
  rawValueSize: number;
  /** Smallest and largest internal keys; empty in an empty table. */
  smallest: Uint8Array;
  largest: Uint8Array;
  minSequence: number;
  maxSequence: number;
  bloomBitsPerKey: number;
  restartInterval: number;
  compression: string;
  /** Milliseconds since the epoch when the table was written. */
  creationTime: number;
}

type NumericField = {
  [K in keyof TableProperties]: TableProperties[K] extends number ? K : never;
}[keyof TableProperties];

/** Each property's name on disk, in bytewise order (a block's keys are kept sorted even where nothing seeks them). */
const PROPERTIES: readonly (
  | { name: string; field: NumericField; kind: 'varint' }
  | { name: string; field: 'smallest' | 'largest'; kind: 'bytes' }
  | { name: string; field: 'compression'; kind: 'ascii' }
)[] = [
  { name: 'bloom.bits.per.key', field: 'bloomBitsPerKey', kind: 'varint' },
  { name: 'compression', field: 'compression', kind: 'ascii' },
  { name: 'creation.time', field: 'creationTime', kind: 'varint' },
  { name: 'data.blocks', field: 'dataBlocks', kind: 'varint' },
  { name: 'data.size', field: 'dataSize', kind: 'varint' },
  { name: 'deletions', field: 'deletions', kind: 'varint' },
  { name: 'entries', field: 'entries', kind: 'varint' },
  { name: 'filter.size', field: 'filterSize', kind: 'varint' },
  { name: 'index.size', field: 'indexSize', kind: 'varint' },
  { name: 'largest', field: 'largest', kind: 'bytes' },
  { name: 'max.sequence', field: 'maxSequence', kind: 'varint' },
  { name: 'min.sequence', field: 'minSequence', kind: 'varint' },
  { name: 'raw.key.size', field: 'rawKeySize', kind: 'varint' },
  { name: 'raw.value.size', field: 'rawValueSize', kind: 'varint' },
  { name: 'restart.interval', field: 'restartInterval', kind: 'varint' },
  { name: 'smallest', field: 'smallest', kind: 'bytes' },
];

/** @internal The names, in the order they are written: for the format test. */
export const PROPERTY_NAMES: readonly string[] = PROPERTIES.map((p) => p.name);

const BY_NAME = new Map(PROPERTIES.map((p) => [p.name, p]));

/** The contents of the properties block holding `p`, before its trailer. */
export function encodeProperties(p: TableProperties): Uint8Array {
  const block = new BlockBuilder(1, 1024);
  const varint = new Uint8Array(MAX_VARINT64_LENGTH);
  for (const prop of PROPERTIES) {
    const name = Buffer.from(prop.name, 'latin1');
    if (prop.kind === 'varint') block.add(name, varint.subarray(0, putVarint64(varint, 0, p[prop.field])));
    else if (prop.kind === 'bytes') block.add(name, p[prop.field]);
    else block.add(name, Buffer.from(p[prop.field], 'latin1'));
  }
  return block.finish();
}

/** The properties the block holds; names this version does not know are skipped. Throws CorruptionError. */
export function decodeProperties(block: Block): TableProperties {
  const p: TableProperties = {
    entries: 0,
    deletions: 0,
    dataBlocks: 0,
    dataSize: 0,
    indexSize: 0,
    filterSize: 0,
    rawKeySize: 0,
    rawValueSize: 0,
    smallest: new Uint8Array(0),
    largest: new Uint8Array(0),
    minSequence: 0,
    maxSequence: 0,
    bloomBitsPerKey: 0,
    restartInterval: 0,
    compression: 'none',
    creationTime: 0,
  };
  const it = new BlockIterator(block);
  const pos = new Int32Array(1);
  for (it.seekToFirst(); it.valid(); it.next()) {
    const name = Buffer.from(it.key()).toString('latin1');
    const prop = BY_NAME.get(name);
    if (prop === undefined) continue;
    const v = it.value();
    if (prop.kind === 'varint') {
      pos[0] = 0;
      const n = getVarint64(v, pos, v.length);
      if (n < 0) throw new CorruptionError(block.file, block.fileOffset, `bad value of property ${name}`);
      p[prop.field] = n;
    } else if (prop.kind === 'bytes') p[prop.field] = v.slice();
    else p[prop.field] = Buffer.from(v).toString('latin1');
  }
  return p;
}
