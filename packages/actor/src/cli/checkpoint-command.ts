/**
 * `heapless checkpoint publish --data DIR --nats URL --bucket B [--keep N]`: publishes the data directory of a
 * follower (a running `heapless serve --follow`'s, a stopped one's, or one built offline with the follower metadata)
 * as a checkpoint in the JetStream object store: a checkpoint of the map (engine + map image), uploaded with its
 * position, schema id and stream, sizes and checksums; then the schema's and stream's checkpoints are pruned to the
 * newest N.
 *
 * The directory is only read, through a read-only open of its engine (no lock: a server may hold it and go on
 * writing), into a private copy beside it (DIR.publish-XXXXXX, removed in every case; one left by a killed run is
 * removed by the next run, publish-copy.ts) whose map is then checkpointed and uploaded as a follower's would be (read-only-copy.ts says why a copy).
 */
import { rm } from 'node:fs/promises';
import { OffHeapMap } from '@heapless/offheap';
import {
  CheckpointStore,
  connectToNats,
  publishMapCheckpoint,
  ReplicaError,
  readFollowerState,
} from '@heapless/replica';
import { type FlagGroup, groupsUsage, parseFlags, usageError } from './flags.js';
import { makePublishCopy, removeAbandonedCopies } from './publish-copy.js';
import { copyEngineReadOnly } from './read-only-copy.js';

const PUBLISH_OPTIONS = {
  title: `Usage: heapless checkpoint publish --data DIR --nats URL --bucket B [--keep N]

Publishes a follower's data directory as a checkpoint in the JetStream object store bucket B, at
the stream position stored in it. DIR may be in use by a running server: it is only read (the
state it had at one moment), into a copy beside it (DIR.publish-XXXXXX, removed after):`,
  column: 15,
  flags: {
    data: {
      type: 'string',
      arg: 'DIR',
      help: ['the data directory (it must hold the follower metadata: position, schema)'],
    },
    nats: { type: 'strings', arg: 'URL', help: ["nats://HOST:PORT (repeat for a cluster's nodes)"] },
    bucket: { type: 'string', arg: 'B', help: ['the object store bucket (created if missing)'] },
    keep: {
      type: 'integer',
      min: 1,
      default: 3,
      arg: 'N',
      help: ['checkpoints of the schema and stream kept (default 3)'],
    },
  },
} as const satisfies FlagGroup;

export const CHECKPOINT_USAGE = groupsUsage([PUBLISH_OPTIONS]);

/** `heapless checkpoint ...` as parsed. */
export interface CheckpointArgs {
  readonly data: string;
  readonly servers: string[];
  readonly bucket: string;
  readonly keep: number;
}

/** Parses `argv` (after `checkpoint`). Throws HEAPLESS_ERR_ACTOR_USAGE. */
export function parseCheckpointArgs(argv: readonly string[]): CheckpointArgs {
  const parsed = parseFlags(PUBLISH_OPTIONS.flags, argv);
  const { positionals, given } = parsed;
  if (positionals[0] !== 'publish' || positionals.length !== 1)
    throw usageError(`unknown checkpoint command ${positionals.join(' ') || '(none)'}`);
  const values = parsed.values();
  for (const name of ['nats', 'data', 'bucket'] as const) {
    if (!given.has(name)) throw usageError(`checkpoint publish needs --${name}`);
  }
  return { data: values.data!, servers: values.nats, bucket: values.bucket!, keep: values.keep };
}

/**
 * Runs the command; writes the manifest's summary as one JSON line to `out`. Throws the engine's and map's errors
 * (HEAPLESS_ERR_ENGINE_NOT_FOUND: no database in the directory) and the replica's (ReplicaError: INVALID_ARGUMENT for a
 * directory without the follower metadata, UNAVAILABLE...).
 */
export async function runCheckpointCommand(args: CheckpointArgs, out: (text: string) => void): Promise<void> {
  const started = performance.now();
  await removeAbandonedCopies(args.data);
  const copy = await makePublishCopy(args.data);
  try {
    await copyEngineReadOnly(args.data, copy);
    const copyMs = performance.now() - started;
    const map = await OffHeapMap.open<string, unknown>({ dir: copy });
    try {
      // Checked here, so that the error names the directory given rather than the copy.
      const state = readFollowerState(map);
      if (state.position === undefined || state.schema === undefined)
        throw new ReplicaError(
          'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
          `${args.data} holds no follower position and schema`,
        );
      const nc = await connectToNats({ servers: args.servers });
      try {
        const store = await CheckpointStore.open(nc, { bucket: args.bucket });
        const p = await publishMapCheckpoint(map, store, { dir: copy, keep: args.keep });
        const { id, schema, position, stream, totalBytes, files } = p.manifest;
        const ms = {
          copyMs: Math.round(copyMs),
          checkpointMs: Math.round(p.checkpointMs),
          uploadMs: Math.round(p.uploadMs),
        };
        out(
          `${JSON.stringify({ id, schema, position, stream, totalBytes, files: files.length, pruned: p.pruned, ...ms })}\n`,
        );
      } finally {
        await nc.close();
      }
    } finally {
      await map.close();
    }
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
}
