/**
 * The start of a follower (issue 16): opens the local data, decides how to start (start-plan.ts), and loads the
 * newest checkpoint or drops the local data when that is the decision. Reads and writes the data directory and asks
 * NATS; the follower then consumes from the position this returns.
 */
import type { OffHeapMap } from '@heapless/offheap';
import { readStreamPosition } from '../change-stream.js';
import type { CheckpointStore, CheckpointSummary } from '../checkpoint-store.js';
import { isReplicaError, ReplicaError } from '../errors.js';
import { type FollowerState, readFollowerState } from './follower-meta.js';
import type { FollowerSettings, FollowerStart } from './follower-options.js';
import { dropLocalData, exists, installCheckpoint, openMap, removeLeftovers } from './local-data.js';
import { planStart, reloadReason } from './start-plan.js';

/** What {@link openFollowerData} hands to the follower: the map (its to close), how it started, the stream's end. */
export interface OpenedData {
  readonly map: OffHeapMap<string, unknown>;
  readonly start: FollowerStart;
  /** The stream's last sequence when asked at start (the position when NATS could not be asked). */
  readonly streamLast: number;
}

/**
 * Opens the follower's data as `settings` say. Throws INVALID_ARGUMENT (a directory with records but no follower
 * metadata), POSITION_PURGED, POSITION_AHEAD, UNAVAILABLE (no usable local data and NATS cannot be reached),
 * CHECKPOINT_CORRUPT, the map's open errors; nothing stays open then.
 */
export async function openFollowerData(settings: FollowerSettings): Promise<OpenedData> {
  const started = performance.now();
  const options = settings;
  const mapOptions = options.map ?? {};
  await removeLeftovers(options.dir);
  let map = (await exists(options.dir)) ? await openMap(options.dir, mapOptions) : undefined;
  try {
    const local = map === undefined ? emptyState() : readFollowerState(map);
    if (map !== undefined && local.position === undefined && map.size > 0)
      throw new ReplicaError(
        'INVALID_ARGUMENT',
        `${options.dir} holds ${map.size} records and no follower position: not a follower's data directory`,
      );
    const streamPosition = await readStreamPosition(options.nc, options.stream).catch((err: unknown) => {
      if (isReplicaError(err, 'UNAVAILABLE') && local.position !== undefined) return undefined;
      throw err;
    });
    const facts = {
      local,
      schema: options.schema,
      stream: options.stream,
      streamPosition,
      maxReplay: settings.maxReplay,
    };
    // The checkpoints are asked for only when the local data will not do.
    const newest =
      options.checkpoints === undefined || streamPosition === undefined || reloadReason(facts) === undefined
        ? undefined
        : await newestOf(options.checkpoints, options.schema, options.stream);
    const plan = planStart({ ...facts, newest });
    options.log?.info({ plan, local }, `follower start: ${plan.kind}`);
    let downloadMs: number | null = null;
    if (plan.kind !== 'resume') {
      await map?.close();
      map = undefined;
      if (plan.kind === 'checkpoint') {
        const installed = await installCheckpoint(options.checkpoints!, newest!, options.dir, mapOptions);
        map = installed.map;
        downloadMs = installed.downloadMs;
      } else {
        await dropLocalData(options.dir);
        map = await openMap(options.dir, mapOptions);
      }
    }
    map ??= await openMap(options.dir, mapOptions);
    const position = plan.kind === 'replay' ? 0 : plan.position;
    const open = map.openStats;
    const start: FollowerStart = {
      kind: plan.kind,
      reason: plan.kind === 'resume' ? null : plan.reason,
      checkpointId: plan.kind === 'checkpoint' ? plan.checkpointId : null,
      position,
      mapSource: open.source,
      mapReplayed: open.replayed,
      downloadMs,
      ms: performance.now() - started,
    };
    return { map, start, streamLast: streamPosition?.lastSeq ?? position };
  } catch (err) {
    await map?.close();
    throw err;
  }
}

/**
 * The newest checkpoint of `schema` taken from `stream` (or from a stream its publisher did not name): a bucket
 * meant for one stream may still hold another's, whose position means nothing here.
 */
async function newestOf(
  store: CheckpointStore,
  schema: string,
  stream: string,
): Promise<CheckpointSummary | undefined> {
  for (const summary of await store.list(schema)) {
    const manifest = await store.manifestIfPresent(summary); // undefined: pruned since the listing
    if (manifest !== undefined && (manifest.stream === undefined || manifest.stream === stream)) return summary;
  }
  return undefined;
}

function emptyState(): FollowerState {
  return { position: undefined, schema: undefined, stream: undefined, checkpoint: undefined };
}
