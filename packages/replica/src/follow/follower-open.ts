/**
 * The start of a follower: opens the local data, decides how to start (start-plan.ts), and loads the
 * newest checkpoint or drops the local data when that is the decision. Reads and writes the data directory and asks
 * NATS; the follower then consumes from the position this returns. Also the two halves of a start while NATS cannot
 * be reached: the local data opened alone ({@link openLocalFollowerData}), and later taken over by a follower as it
 * is (the `localMap` option).
 */
import type { OffHeapMap } from '@heapless/offheap';
import { assertResumable, readStreamPosition, type StreamPosition } from '../change/change-stream.js';
import type { CheckpointStore, CheckpointSummary } from '../checkpoint/checkpoint-store.js';
import { isReplicaError, ReplicaError } from '../errors.js';
import { type FollowerState, readFollowerState } from './follower-meta.js';
import type { FollowerOptions, FollowerSettings, FollowerStart } from './follower-options.js';
import { dropLocalData, exists, installCheckpoint, openMap, removeLeftovers } from './local-data.js';
import { planStart, reloadReason } from './start-plan.js';

/** What {@link openFollowerData} hands to the follower: the map (its to close), how it started, the stream's end. */
export interface OpenedData {
  readonly map: OffHeapMap<string, unknown>;
  readonly start: FollowerStart;
  /** The stream's first and last sequence when asked at start; undefined when NATS could not be asked. */
  readonly stream: StreamPosition | undefined;
}

/**
 * Opens the follower's data as `settings` say. Throws INVALID_ARGUMENT (a directory with records but no follower
 * metadata), POSITION_PURGED, POSITION_AHEAD, UNAVAILABLE (no usable local data and NATS cannot be reached),
 * CHECKPOINT_CORRUPT, the map's open errors; nothing stays open then.
 */
export async function openFollowerData(settings: FollowerSettings): Promise<OpenedData> {
  const started = performance.now();
  if (settings.localMap !== undefined) return takeOver(settings, settings.localMap, started);
  const options = settings;
  const mapOptions = options.map ?? {};
  await removeLeftovers(options.dir);
  // Asked while the map opens (its image is checksummed meanwhile): the answer waits in the socket till then.
  const asking = readStreamPosition(options.nc, options.stream);
  asking.catch(() => {}); // judged below, once the local position is known
  let map = (await exists(options.dir)) ? await openMap(options.dir, mapOptions) : undefined;
  try {
    const local = map === undefined ? emptyState() : readFollowerState(map);
    if (map !== undefined && local.position === undefined && map.size > 0)
      throw new ReplicaError(
        'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
        `${options.dir} holds ${map.size} records and no follower position: not a follower's data directory`,
      );
    const streamPosition = await asking.catch((err: unknown) => {
      if (isReplicaError(err, 'HEAPLESS_ERR_REPLICA_UNAVAILABLE') && local.position !== undefined) return undefined;
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
      mapImageCheck: open.imageCheck,
      downloadMs,
      ms: performance.now() - started,
    };
    return { map, start, stream: streamPosition };
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

/** What {@link openLocalFollowerData} needs: where the data is, what it must be of, how to open the map. */
export type LocalDataOptions = Pick<FollowerOptions, 'dir' | 'stream' | 'schema' | 'map'>;

/** The local data opened alone: its map (the caller's to close, or to hand to a follower) and how it started. */
export interface LocalFollowerData {
  readonly map: OffHeapMap<string, unknown>;
  /** A `resume` from the stored position, as a follower that reaches NATS reports it. */
  readonly start: FollowerStart;
}

/**
 * Opens the follower's local data without NATS, for a server that starts while NATS cannot be reached: it serves
 * the map read-only until a follower takes it over (`localMap`). The data is used only when it is follower data of
 * `stream` and `schema`; it is never dropped or changed here. Throws UNAVAILABLE when there is no such data (no
 * directory, no position, another schema or stream: nothing stays open, the directory is not created),
 * INVALID_ARGUMENT (records but no follower metadata), the map's open errors.
 */
export async function openLocalFollowerData(options: LocalDataOptions): Promise<LocalFollowerData> {
  const started = performance.now();
  const { dir, stream, schema } = options;
  await removeLeftovers(dir);
  if (!(await exists(dir))) throw noLocalData(`${dir} does not exist`);
  const map = await openMap(dir, options.map ?? {});
  try {
    const local = readFollowerState(map);
    if (local.position === undefined) {
      if (map.size > 0)
        throw new ReplicaError(
          'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
          `${dir} holds ${map.size} records and no follower position: not a follower's data directory`,
        );
      throw noLocalData(`${dir} holds no follower data`);
    }
    const mismatch = localMismatch(local, stream, schema);
    if (mismatch !== undefined) throw noLocalData(`${dir} holds ${mismatch}`);
    return { map, start: resumeStart(map, local.position, started) };
  } catch (err) {
    await map.close();
    throw err;
  }
}

/** The follower start of `settings.localMap`: its own position, after checking that the stream still holds what follows. */
async function takeOver(
  settings: FollowerSettings,
  map: OffHeapMap<string, unknown>,
  started: number,
): Promise<OpenedData> {
  const { stream, schema } = settings;
  const local = readFollowerState(map);
  if (local.position === undefined)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `the local map of ${settings.dir} holds no follower position`,
    );
  const mismatch = localMismatch(local, stream, schema);
  if (mismatch !== undefined)
    throw new ReplicaError(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
      `the local map of ${settings.dir} holds ${mismatch}`,
    );
  const streamPosition = await readStreamPosition(settings.nc, stream).catch((err: unknown) => {
    if (isReplicaError(err, 'HEAPLESS_ERR_REPLICA_UNAVAILABLE')) return undefined; // the follower's reader waits for NATS
    throw err;
  });
  if (streamPosition !== undefined) checkTakeOver(streamPosition, local.position);
  const start = resumeStart(map, local.position, started);
  settings.log?.info({ local }, 'follower start: resume (the open local map taken over)');
  return { map, start, stream: streamPosition };
}

/** Throws POSITION_PURGED or POSITION_AHEAD when a map in use at `position` cannot resume from `stream`. */
function checkTakeOver(stream: StreamPosition, position: number): void {
  try {
    assertResumable(stream, position);
  } catch (err) {
    const e = err as ReplicaError;
    throw new ReplicaError(
      e.code,
      `${e.message}; the local map, in use at position ${position}, is kept as it is (a start with NATS ` +
        'reachable loads a checkpoint or replays the stream)',
      { cause: err },
    );
  }
}

/** What is wrong with local data for following `stream` and `schema`, or undefined when it fits. */
function localMismatch(local: FollowerState, stream: string, schema: string): string | undefined {
  if (local.schema !== schema) return `data of schema ${local.schema}, not ${schema}`;
  if (local.stream !== stream) return `data of stream ${local.stream}, not ${stream}`;
  return undefined;
}

function resumeStart(map: OffHeapMap<string, unknown>, position: number, started: number): FollowerStart {
  return {
    kind: 'resume',
    reason: null,
    checkpointId: null,
    position,
    mapSource: map.openStats.source,
    mapReplayed: map.openStats.replayed,
    mapImageCheck: map.openStats.imageCheck,
    downloadMs: null,
    ms: performance.now() - started,
  };
}

function noLocalData(why: string): ReplicaError {
  return new ReplicaError(
    'HEAPLESS_ERR_REPLICA_UNAVAILABLE',
    `no local data to serve while NATS cannot be reached: ${why}`,
  );
}
