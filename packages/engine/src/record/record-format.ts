/**
 * Constants of the log format shared by the write-ahead log and the manifest (LevelDB's db/log_format, see
 * FORMAT.md "Log files").
 *
 *   file     = block*                       every block is BLOCK_SIZE bytes except possibly the last
 *   block    = record* trailer?             a trailer of < HEADER_SIZE zero bytes fills a block's unusable end
 *   record   = checksum u32le | length u16le | type u8 | payload[length]
 *   checksum = maskCrc(crc32c(type ++ payload))
 *
 * A logical record that does not fit the rest of a block is cut into a FIRST fragment, MIDDLE fragments and a LAST
 * fragment; one that fits is a single FULL record.
 */

/** 32 KiB: a reader that finds a bad block can resynchronise at the next block boundary; as in LevelDB. */
export const BLOCK_SIZE = 32 * 1024;

/** checksum (4) + length (2) + type (1). */
export const HEADER_SIZE = 7;

/** Record types. Values are on disk: never renumber. 0 is reserved for preallocated (zeroed) space. */
export enum RecordType {
  Zero = 0,
  Full = 1,
  First = 2,
  Middle = 3,
  Last = 4,
}
