// A 3-node JetStream cluster on loopback and a stream with 3 replicas: a producer keeps publishing (retrying
// through UNAVAILABLE with the same message id) while first the stream's leader and then the node that holds the
// reader's consumer are killed with SIGKILL and started again. No acknowledged publish is lost or stored twice, the
// stream's sequences have no hole, and the reader that ran through it all saw every sequence once, in order.

import { jetstreamManager } from '@nats-io/jetstream';
import { expect, it } from 'vitest';
import { type ChangeConsumer, ChangePublisher, consumeChanges, ensureChangeStream, setChange } from '../index.js';
import { readStreamPosition } from '../internal.js';
import { type NatsNode, startNatsCluster } from '../testing/nats-server.js';
import { natsForTests, range, recorder, retryUnavailable } from '../testing/replica-support.js';

const servers = natsForTests(() => startNatsCluster(3));

/** The node named `name` (a JetStream leader's server name). */
function node(name: string | undefined): NatsNode {
  const found = servers.nats.nodes.find((n) => n.name === name);
  if (found === undefined) throw new Error(`no node named ${name}`);
  return found;
}

/** The node that holds the reader's own consumer, once it has one with a leader (it may be making a new one). */
async function consumerLeader(stream: string, reader: ChangeConsumer): Promise<string> {
  const jsm = await jetstreamManager(servers.nc);
  const deadline = performance.now() + 30_000;
  while (performance.now() < deadline) {
    const name = reader.consumer;
    const info = name === undefined ? undefined : await jsm.consumers.info(stream, name).catch(() => undefined);
    if (info?.cluster?.leader !== undefined) return info.cluster.leader;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the reader's consumer (${reader.consumer}) had no leader within 30 s`);
}

it('loses no acknowledged publish and no sequence while nodes of a 3-node cluster are killed', async () => {
  const stream = 'replicated';
  await ensureChangeStream(servers.nc, { name: stream, replicas: 3 });
  const jsm = await jetstreamManager(servers.nc);
  const reader = recorder();
  const consumer = await consumeChanges(servers.nc, {
    stream,
    after: 0,
    handler: reader.handler,
    maxBatchMessages: 32,
    fetchExpiresMs: 1_000,
  });

  // The writer publishes without pause until told to stop; the faults below happen while it runs.
  const publisher = new ChangePublisher(servers.nc, { stream, schema: 's1', timeoutMs: 3_000 });
  const acked = new Map<string, number>();
  const waiting: { count: number; resolve: () => void; reject: (err: unknown) => void }[] = [];
  let stop = false;
  const writer = (async () => {
    for (let i = 1; !stop; i++) {
      const msgId = `w${i}`;
      const write = () => publisher.publish([setChange(`key${i % 50}`, Buffer.from(`write ${i}`))], { msgId });
      acked.set(msgId, (await retryUnavailable(write)).seq);
      for (const w of waiting.splice(0))
        if (acked.size >= w.count) w.resolve();
        else waiting.push(w);
    }
  })();
  let writerError: unknown;
  writer.catch((err) => {
    writerError = err;
    for (const w of waiting.splice(0)) w.reject(err);
  });
  /** Resolves once `more` publishes beyond those acknowledged now are acknowledged; rejects if the writer fails. */
  const acks = (more: number) => {
    const count = acked.size + more;
    return new Promise<void>((resolve, reject) => {
      if (writerError !== undefined) reject(writerError);
      else waiting.push({ count, resolve, reject });
    });
  };

  try {
    await acks(100);
    const streamLeader = node((await jsm.streams.info(stream)).cluster?.leader);
    await streamLeader.kill(); // a new leader is elected among the two left, under the writer
    await acks(100);
    await streamLeader.start(); // healthy again once it has caught up with the stream
    await acks(100);
    const consumerNode = node(await consumerLeader(stream, consumer));
    await consumerNode.kill(); // the reader's consumer is gone with its node: it starts a new one elsewhere
    await acks(100);
    await consumerNode.start();
    await acks(50);
  } finally {
    stop = true;
    await writer;
  }

  const total = acked.size;
  await reader.reached(total);
  await consumer.close();
  expect(reader.seqs()).toEqual(range(1, total));
  // Every write was acknowledged once, with its own sequence, and the stream holds exactly those.
  expect(new Set(acked.values()).size).toBe(total);
  expect((await readStreamPosition(servers.nc, stream)).lastSeq).toBe(total);
  const stored = new Map<number, string>();
  for (const batch of reader.batches) for (const m of batch.messages) stored.set(m.seq, m.msgId!);
  for (const [msgId, seq] of acked) expect(stored.get(seq)).toBe(msgId);
}, 180_000); // two restarts may each take up to their 30 s readiness bound on a loaded machine, and the reader's recovery more
