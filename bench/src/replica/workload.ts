/**
 * The `replica` workload, in the harness's child process: start a nats-server of its own (stopped on every path by
 * a {@link ProcessGroup}), make the phase's data (not timed), then time the system reading it.
 *
 * - `consume`: from the first message to the N-th, `replica` through `consumeChanges` with an empty handler (every
 *   message decoded and its sequence checked), `nats-js` through nats.js's ordered consumer counting messages.
 * - `download`: every file of the checkpoint, `replica` through `CheckpointStore.download` (sizes and SHA-256
 *   checked, files written and fsynced, the directory renamed into place), `nats-js` reading each object's stream
 *   into nothing (with node:crypto checking the store's digests, as CheckpointStore sets it up).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type CheckpointManifest, type CheckpointStore, connectToNats, consumeChanges } from '@heapless/replica';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { Objm, setSha256Backend } from '@nats-io/obj';
import { type BenchmarkWorkload, type RunContext, SystemUnavailableError } from '../harness/benchmark.js';
import { freePort, LOOPBACK } from '../server/free-port.js';
import { ProcessGroup } from '../server/process-group.js';
import { BUCKET, fillStream, STREAM, uploadCheckpoint } from './fixtures.js';
import { followerStartPhase } from './follower-start.js';
import { NATS_INSTALL_HINT, natsServerBinary, natsServerCommand } from './nats-server-command.js';
import { writeLatencyPhase } from './write-latency.js';

const CONSUME_CASE = 'consume (~500 B messages, empty handler)';
const DOWNLOAD_CASE = 'download checkpoint';
/** Messages per pull for both readers: nats.js's ordered consumer and the replica reader take the same. */
const PULL_MESSAGES = 1000;

export const replicaWorkload: BenchmarkWorkload = {
  async run(ctx: RunContext): Promise<void> {
    if (!['replica', 'nats-js', 'follower'].includes(ctx.system))
      throw new Error(`replica has no system '${ctx.system}'`);
    const binary = natsServerBinary();
    if (binary === undefined) throw new SystemUnavailableError(`nats-server is not installed; ${NATS_INSTALL_HINT}`);
    const group = new ProcessGroup();
    try {
      const port = await freePort();
      await group.start(natsServerCommand(binary, port, join(ctx.dataDir, 'nats')));
      const nc = await connectToNats({ servers: `nats://${LOOPBACK}:${port}` });
      try {
        if (ctx.system === 'follower') {
          // The follower's own rows, with their floors measured in the same process (see follower-start.ts).
          if (ctx.phases.has('start')) await followerStartPhase(ctx, nc);
          if (ctx.phases.has('write')) await writeLatencyPhase(ctx, group, `nats://${LOOPBACK}:${port}`);
        } else {
          if (ctx.phases.has('consume')) await consumePhase(ctx, nc);
          if (ctx.phases.has('download')) await downloadPhase(ctx, nc);
        }
      } finally {
        await nc.close();
      }
    } finally {
      await group.close();
    }
  },
};

async function consumePhase(ctx: RunContext, nc: NatsConnection): Promise<void> {
  const last = await fillStream(ctx, nc);
  const ticker = ctx.progress(`consume ${ctx.system}`, last);
  const start = performance.now();
  if (ctx.system === 'replica') {
    let reached!: () => void;
    const done = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const reader = await consumeChanges(nc, {
      stream: STREAM,
      after: 0,
      maxBatchMessages: PULL_MESSAGES,
      handler: (batch) => {
        ticker.update(batch.lastSeq);
        if (batch.lastSeq >= last) reached();
      },
    });
    await Promise.race([done, reader.done]);
    await reader.close();
  } else {
    const consumer = await jetstream(nc).consumers.get(STREAM);
    const messages = await consumer.consume({ max_messages: PULL_MESSAGES });
    for await (const m of messages) {
      ticker.update(m.seq);
      if (m.seq >= last) break;
    }
    await messages.close();
  }
  const seconds = (performance.now() - start) / 1000;
  ticker.finish();
  ctx.record({ case: CONSUME_CASE, metric: 'msgs/s', value: last / seconds, unit: 'ops/s', better: 'higher' });
}

async function downloadPhase(ctx: RunContext, nc: NatsConnection): Promise<void> {
  const { store, manifest } = await uploadCheckpoint(ctx, nc);
  const ticker = ctx.progress(`download ${ctx.system}`, manifest.files.length);
  const start = performance.now();
  if (ctx.system === 'replica') await downloadWithReplica(store, manifest, join(ctx.dataDir, 'downloaded'));
  else await readObjects(nc, manifest, () => ticker.update(1));
  const seconds = (performance.now() - start) / 1000;
  ticker.finish();
  const mib = manifest.totalBytes / (1024 * 1024);
  ctx.record({ case: DOWNLOAD_CASE, metric: 'MiB/s', value: mib / seconds, unit: 'MiB/s', better: 'higher' });
}

async function downloadWithReplica(store: CheckpointStore, manifest: CheckpointManifest, dest: string) {
  await store.download(manifest, dest);
  await rm(dest, { recursive: true }); // after the clock stopped: not timed
}

/** Reads every file object of the checkpoint to its end, keeping nothing. */
async function readObjects(nc: NatsConnection, manifest: CheckpointManifest, onFile: () => void): Promise<void> {
  setSha256Backend('native'); // as CheckpointStore does: the floor is nats.js at its fastest
  const objects = await new Objm(nc).open(BUCKET);
  for (const file of manifest.files) {
    const result = await objects.get(`checkpoints/${manifest.schema}/${manifest.id}/files/${file.path}`);
    if (result === null) throw new Error(`${file.path} is missing from the bucket`);
    let size = 0;
    const reader = result.data.getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) size += r.value.length;
    const stored = file.storedSize ?? file.size; // the object holds the encoded bytes when the file is compressed
    if (size !== stored) throw new Error(`${file.path}: ${size} bytes read, ${stored} stored`);
    onFile();
  }
}
