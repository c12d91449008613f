/**
 * What a table's reader keeps in memory from the open on (table-reader.ts): read and checked from the end of the file,
 * in one read of its tail as a rule.
 */
import { CorruptionError } from '../base/errors.js';
import { Block } from './block.js';
import { blockContentsAt, readBlockContents, readExactly } from './block-io.js';
import { BlockIterator } from './block-iterator.js';
import { BloomFilter } from './bloom.js';
import {
  BlockHandle,
  decodeBlockHandle,
  decodeFooter,
  FILTER_META_KEY,
  FOOTER_SIZE,
  PROPERTIES_META_KEY,
} from './table-format.js';
import { decodeProperties, type TableProperties } from './table-properties.js';

// Bytes read from the end of a table at open, in one read: the footer and, usually, the index, metaindex, filter and
// properties blocks before it (about 2% of a table of 100-byte entries: 44 KiB of a 2 MiB table). When they turn out
// to start earlier, one more read fetches them.
const TAIL_READ_BYTES = 64 * 1024;

/** A table's index block, bloom filter (null when it has none) and properties. */
export interface TableTail {
  index: Block;
  filter: BloomFilter | null;
  properties: TableProperties;
}

/**
 * Reads and checks the footer, metaindex, index, filter and properties of the table open as `fd` (`fileSize` bytes at
 * `path`). Throws CorruptionError if any is bad, EngineError IO if the file cannot be read; closes nothing.
 */
export function readTableTail(fd: number, path: string, fileSize: number): TableTail {
  if (fileSize < FOOTER_SIZE) {
    throw new CorruptionError(path, 0, `file of ${fileSize} bytes is shorter than the ${FOOTER_SIZE}-byte footer`);
  }
  const footerAt = fileSize - FOOTER_SIZE;
  // The filter, properties, metaindex and index blocks lie just before the footer: one read of the file's tail
  // usually brings them all in with it.
  const tailStart = fileSize - Math.min(fileSize, TAIL_READ_BYTES);
  const tail = readExactly(fd, path, tailStart, fileSize - tailStart);
  const { metaindex, index: indexHandle } = decodeFooter(tail, footerAt - tailStart, path, footerAt);
  const metaOffset = metaindex.offset;
  const metaSize = metaindex.size;
  const indexOffset = indexHandle.offset;
  const indexSize = indexHandle.size;

  const meta = new Block(
    metaOffset >= tailStart
      ? blockContentsAt(tail, tailStart, path, metaOffset, metaSize, footerAt, true)
      : readBlockContents(fd, path, metaOffset, metaSize, footerAt, true),
    path,
    metaOffset,
  );
  let filterOffset = -1;
  let filterSize = 0;
  let propsOffset = -1;
  let propsSize = 0;
  const it = new BlockIterator(meta);
  const pos = new Int32Array(1);
  const handle = new BlockHandle();
  for (it.seekToFirst(); it.valid(); it.next()) {
    const name = Buffer.from(it.key()).toString('latin1');
    const v = it.value();
    pos[0] = 0;
    if (!decodeBlockHandle(v, pos, v.length, handle))
      throw new CorruptionError(path, metaOffset, `bad block handle for ${name} in metaindex`);
    if (name === FILTER_META_KEY) {
      filterOffset = handle.offset;
      filterSize = handle.size;
    } else if (name === PROPERTIES_META_KEY) {
      propsOffset = handle.offset;
      propsSize = handle.size;
    }
  }
  if (propsOffset < 0) throw new CorruptionError(path, metaOffset, 'metaindex has no properties block');

  // The blocks the reader keeps (index, filter) are views into one buffer: the tail when it holds them all and
  // little else, else a copy or read of just [first of them, footer).
  let start = Math.min(indexOffset, propsOffset);
  if (filterOffset >= 0) start = Math.min(start, filterOffset);
  let region: Uint8Array = tail;
  let regionStart = tailStart;
  if (start < tailStart) {
    region = readExactly(fd, path, start, footerAt - start);
    regionStart = start;
  } else if (start - tailStart > (fileSize - tailStart) / 4) {
    region = tail.slice(start - tailStart, footerAt - tailStart);
    regionStart = start;
  }
  const index = new Block(
    blockContentsAt(region, regionStart, path, indexOffset, indexSize, footerAt, true),
    path,
    indexOffset,
  );
  const filter =
    filterOffset < 0
      ? null
      : new BloomFilter(blockContentsAt(region, regionStart, path, filterOffset, filterSize, footerAt, true));
  const props = decodeProperties(
    new Block(blockContentsAt(region, regionStart, path, propsOffset, propsSize, footerAt, true), path, propsOffset),
  );
  if (props.dataSize > footerAt) throw new CorruptionError(path, metaOffset, 'data size property past the footer');
  return { index, filter, properties: props };
}
