import { readFileSync } from 'node:fs';
import { nativeStatus, OffHeapMap } from '@heapless/offheap';
import { KvActor } from '../kv/kv-actor.js';
import { kvRoutes } from '../kv/kv-http.js';
import { spawn } from '../runtime/spawn.js';
import { Metrics } from '../server/metrics.js';
import { type Published, publish } from '../server/publish.js';
import type { ServeArgs } from './cli-args.js';
import { dataDirUndo } from './data-dir-undo.js';
import { serveEngineOptions } from './serve-config.js';
import { type Following, openFollowing } from './serve-follow.js';

/** A running `heapless serve`; `close()` stops accepting, finishes calls in flight, stops the actor (closing the map). */
export interface RunningServer extends Published {
  /**
   * How the map got its entries at start: from its map image (`imageLoader`: mapped by the native helper, or read),
   * by a scan of the engine (`imageRejected` says why), or memory-only; `native`: why map images cannot be mapped in
   * this process (the native helper not built for this Node, and why), null when they can.
   */
  readonly startup: {
    /** Entries in the map; absent after a crash open whose replayed writes are still going into memory. */
    entries?: number;
    /** Then: those writes not in memory yet (they are served already, each key's before it is read). */
    replayPending?: number;
    loadedFrom: string;
    imageLoader: string | null;
    imageRejected: string | null;
    native: string | null;
    ms: number;
    /** How a following server got its data (local, checkpoint, replay); null for one that does not follow. */
    follower: Following['start'] | null;
  };
}

/**
 * Starts what `heapless serve` runs: a KV actor over an OffHeapMap (persisted in `args.data`, or memory-only), with
 * metrics, published on `args.host:args.port`, logging with pino at `args.logLevel`.
 */
export async function serve(args: ServeArgs): Promise<RunningServer> {
  // Read before anything is opened: a missing file fails the start with its path (ENOENT).
  const tls =
    args.tlsCert !== undefined && args.tlsKey !== undefined
      ? { cert: readFileSync(args.tlsCert), key: readFileSync(args.tlsKey) }
      : undefined;
  // Looked at before the open creates anything, to take back only what this start made if it fails after the open.
  const undoData = args.memory ? async () => {} : await dataDirUndo(args.data);
  // The engine reports a directory locked by another process as HEAPLESS_ERR_ENGINE_LOCKED, naming the directory.
  const opening = performance.now();
  const following = args.follow === undefined ? undefined : await openFollowing(args, args.follow);
  const map =
    following?.map ??
    (args.memory
      ? new OffHeapMap<string, unknown>()
      : await OffHeapMap.open<string, unknown>({
          dir: args.data,
          sync: args.sync,
          engine: serveEngineOptions(args.engine),
        }));
  const closeMap = following?.close ?? (() => map.close());
  const { loadedFrom, imageLoader, imageRejected } = map.stats();
  // After a crash the WAL's writes go into memory after the open: counting now would wait for all of them.
  const { replayPending } = map.openStats;
  const startup = {
    ...(replayPending === 0 ? { entries: map.size } : { replayPending }),
    loadedFrom,
    imageLoader,
    imageRejected,
    native: nativeStatus.problem,
    ms: Math.round(performance.now() - opening),
    follower: following?.start ?? null,
  };
  const metrics = new Metrics();
  metrics.addGauge('heapless_entries', 'Entries in the map.', () => map.size);
  metrics.addGauge('heapless_offheap_bytes', 'Bytes of the map off the JS heap (index and arena).', () => {
    const s = map.stats();
    return s.indexBytes + s.arenaBytes;
  });
  // The engine behind a persisted map: level shape and background work, the figures that explain write stalls.
  const engine = () => map.engineStats();
  if (!args.memory) {
    metrics.addGauge('heapless_engine_l0_files', 'Tables in level 0.', () => engine()?.levels[0]?.files ?? 0);
    metrics.addGauge('heapless_engine_table_files', 'Tables in every level.', () =>
      (engine()?.levels ?? []).reduce((n, l) => n + l.files, 0),
    );
    metrics.addGauge('heapless_engine_table_bytes', 'Bytes of tables in every level.', () =>
      (engine()?.levels ?? []).reduce((n, l) => n + l.bytes, 0),
    );
    metrics.addGauge(
      'heapless_engine_memtable_bytes',
      'Bytes of live and frozen memtables.',
      () => engine()?.memtableBytes ?? 0,
    );
    metrics.addGauge('heapless_engine_flushes', 'Memtable flushes since open.', () => engine()?.flushes ?? 0);
    metrics.addGauge('heapless_engine_compactions', 'Compactions since open.', () => engine()?.compactions ?? 0);
    metrics.addGauge(
      'heapless_engine_write_stalls',
      'Writes that waited for flushes or compactions.',
      () => engine()?.writeStalls ?? 0,
    );
  }
  following?.addMetrics(metrics);
  let ref: ReturnType<typeof spawn<KvActor>>;
  try {
    // Reads are answered only once caught up with the stream, unless told otherwise.
    if (following !== undefined && args.follow?.serveStale !== true) await following.waitCaughtUp();
    // One getMany reply stays within the connection's reply bound, as one get reply does.
    const kv = new KvActor(map, {
      persistent: !args.memory,
      maxResultBytes: args.maxReplyBytes,
      checkpointRoot: args.checkpointRoot,
      ...following?.kvOptions,
    });
    ref = spawn(kv, { observer: metrics, mailbox: 65_536 });
  } catch (e) {
    await closeMap();
    metrics.close();
    await undoData();
    throw e;
  }
  let server: Published;
  try {
    server = await publish(ref, {
      host: args.host,
      port: args.port,
      ...(args.tcpPort === undefined ? {} : { tcp: { port: args.tcpPort } }),
      token: args.token,
      maxInFlight: args.maxInFlight,
      maxRequestBytes: args.maxRequestBytes,
      maxReplyBytes: args.maxReplyBytes,
      maxConnections: args.maxConnections,
      headersTimeoutMs: args.headersTimeoutMs,
      requestTimeoutMs: args.requestTimeoutMs,
      keepAliveTimeoutMs: args.keepAliveTimeoutMs,
      heartbeatMs: args.heartbeatMs,
      allowedOrigins: args.allowedOrigins,
      allowedHosts: args.allowedHosts,
      allowTokenInQuery: args.allowTokenInQuery,
      tls,
      insecure: args.insecure,
      logger: { level: args.logLevel },
      metrics,
      routes: kvRoutes,
      streams: KvActor.streams,
      ...(following === undefined ? {} : { health: following.health }),
    });
  } catch (e) {
    // The port in use (EADDRINUSE) ends here: the data was opened first, see data-dir-undo.ts.
    await ref.stop();
    metrics.close();
    await undoData();
    throw e;
  }
  following?.attachLog(server.log);
  return {
    ...server,
    startup,
    async close() {
      await server.close();
      await ref.stop({ drain: true });
      metrics.close();
    },
  };
}
