// The ordered reader against a real nats-server: every sequence once and in order from position + 1, in batches,
// one handler call at a time with at most one pull's messages waiting; across a server restart and a kill -9;
// stopped with a typed error (after what came before) by a purge, a deleted message, a malformed message or
// another schema; and close() leaves no consumer on the server.

import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { headers } from '@nats-io/nats-core';
import { describe, expect, it } from 'vitest';
import {
  type ChangeConsumer,
  ChangePublisher,
  connectToNats,
  consumeChanges,
  ensureChangeStream,
  ReplicaError,
  type StreamPosition,
  setChange,
} from '../index.js';
import { readStreamPosition } from '../internal.js';
import { startNatsServer } from '../testing/nats-server.js';
import { gate, natsForTests, range, recorder, rejectionCode, retryUnavailable } from '../testing/replica-support.js';

const servers = natsForTests(startNatsServer);

/** The value message `seq` sets by default: `v<seq>`. */
const shortValue = (seq: number) => Buffer.from(`v${seq}`);

/** A stream named `name` with `count` messages, each setting `k<seq>` to `value(seq)`. */
async function streamWith(name: string, count: number, value = shortValue): Promise<ChangePublisher> {
  await ensureChangeStream(servers.nc, { name });
  const publisher = new ChangePublisher(servers.nc, { stream: name, schema: 's1' });
  await publishRange(publisher, 1, count, value);
  return publisher;
}

async function publishRange(publisher: ChangePublisher, from: number, to: number, value = shortValue): Promise<void> {
  for (let seq = from; seq <= to; seq++)
    await publisher.publish([setChange(`k${seq}`, value(seq))], { msgId: `m${seq}` });
}

/** Reads `stream` from its start in batches of at most `maxBatchMessages` until `last` came; the reader is closed. */
async function readUntil(stream: string, last: number, maxBatchMessages: number) {
  const all = recorder();
  const consumer = await consumeChanges(servers.nc, { stream, after: 0, handler: all.handler, maxBatchMessages });
  await all.reached(last);
  await consumer.close(); // waits for the handler in flight: its batch then counts
  await consumer.done;
  return { all, consumer };
}

async function failure(consumer: ChangeConsumer): Promise<ReplicaError> {
  const err = await consumer.done.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ReplicaError);
  return err as ReplicaError;
}

describe('consumeChanges', () => {
  it('delivers every message once, in order, in batches of at most maxBatchMessages, from position + 1', async () => {
    await streamWith('ordered', 500);
    const { all, consumer } = await readUntil('ordered', 500, 64);
    expect(consumer.position).toBe(500);
    expect(consumer.lag).toBe(0);
    expect(all.seqs()).toEqual(range(1, 500));
    for (const b of all.batches) {
      expect(b.messages.length).toBeLessThanOrEqual(64);
      expect(b.firstSeq).toBe(b.messages[0]!.seq);
      expect(b.lastSeq).toBe(b.messages.at(-1)!.seq);
      expect(b.pending).toBe(500 - b.lastSeq);
    }
    const last = all.batches.at(-1)!.messages.at(-1)!;
    expect(last).toMatchObject({ seq: 500, msgId: 'm500', schema: 's1' });
    expect(Buffer.from(last.changes[0]!.value!).toString()).toBe('v500');

    const tail = recorder();
    const resumed = await consumeChanges(servers.nc, { stream: 'ordered', after: 321, handler: tail.handler });
    await tail.reached(500);
    expect(tail.seqs()).toEqual(range(322, 500));
    await resumed.close();
  });

  it('hands a pull over as one batch while the stream holds more, however many socket reads it takes', async () => {
    // 4 KiB values: a pull of 100 messages (400 KiB) comes in many reads of the socket.
    await streamWith('whole-pulls', 300, (seq) => Buffer.alloc(4096, seq));
    const { all } = await readUntil('whole-pulls', 300, 100);
    expect(all.batches.map((b) => b.messages.length)).toEqual([100, 100, 100]);
    expect(all.seqs()).toEqual(range(1, 300));
  });

  it('waits for the handler before it pulls again: at most two pulls of messages are out', async () => {
    const publisher = await streamWith('backpressure', 100);
    const held = gate();
    let calls = 0;
    let firstBatch = 0;
    const consumer = await consumeChanges(servers.nc, {
      stream: 'backpressure',
      after: 0,
      maxBatchMessages: 10,
      handler: async (batch) => {
        calls++;
        if (calls === 1) {
          firstBatch = batch.messages.length;
          await held.closed;
        }
      },
    });
    await publishRange(publisher, 101, 300);
    const jsm = await jetstreamManager(servers.nc);
    // Whenever we look while the handler holds its first batch, the server has delivered at most two pulls (20).
    for (let i = 0; i < 5; i++) {
      const [info] = await jsm.consumers.list('backpressure').next();
      expect(info!.delivered.stream_seq).toBeLessThanOrEqual(20);
      expect(calls).toBe(1);
      await servers.nc.flush();
    }
    expect(firstBatch).toBeGreaterThan(0);
    expect(consumer.position).toBe(0);
    held.open();
    await consumer.close();
    expect(consumer.position).toBeGreaterThanOrEqual(firstBatch);
  });

  it('resumes with no gap and no duplicate after a server restart and after a kill -9', async () => {
    const publisher = await streamWith('restart', 300);
    const all = recorder();
    let restarted = false;
    const node = servers.nats.nodes[0]!;
    const consumer = await consumeChanges(servers.nc, {
      stream: 'restart',
      after: 0,
      maxBatchMessages: 50,
      fetchExpiresMs: 1000,
      handler: async (batch) => {
        all.handler(batch);
        if (!restarted && batch.lastSeq >= 100) {
          restarted = true;
          await node.restart(); // a clean stop and start while the reader holds a pull
        }
      },
    });
    await all.reached(300);
    await node.kill();
    await node.start();
    await retryUnavailable(() => publishRange(publisher, 301, 400));
    await all.reached(400);
    await consumer.close();
    expect(all.seqs()).toEqual(range(1, 400));
    expect(consumer.position).toBe(400);
  });

  it('refuses to start from a purged or a future position', async () => {
    await streamWith('start-checks', 10);
    await (await jetstreamManager(servers.nc)).streams.purge('start-checks', { seq: 6 });
    const handler = () => {};
    expect(await rejectionCode(consumeChanges(servers.nc, { stream: 'start-checks', after: 3, handler }))).toBe(
      'HEAPLESS_ERR_REPLICA_POSITION_PURGED',
    );
    expect(await rejectionCode(consumeChanges(servers.nc, { stream: 'start-checks', after: 11, handler }))).toBe(
      'HEAPLESS_ERR_REPLICA_POSITION_AHEAD',
    );
    expect(await rejectionCode(consumeChanges(servers.nc, { stream: 'nope', after: 0, handler }))).toBe(
      'HEAPLESS_ERR_REPLICA_STREAM_NOT_FOUND',
    );
    expect(await rejectionCode(consumeChanges(servers.nc, { stream: 'start-checks', after: -1, handler }))).toBe(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
    );
    const ok = await consumeChanges(servers.nc, { stream: 'start-checks', after: 5, handler });
    await ok.close();

    // A position the caller read a moment ago stands in for asking (here one that claims a purge past 5)...
    const now = await readStreamPosition(servers.nc, 'start-checks');
    const checked = (streamPosition: StreamPosition, after: number) =>
      rejectionCode(consumeChanges(servers.nc, { stream: 'start-checks', after, handler, streamPosition }));
    expect(await checked({ ...now, firstSeq: 9 }, 5)).toBe('HEAPLESS_ERR_REPLICA_POSITION_PURGED');
    expect(await checked({ ...now, stream: 'other' }, 5)).toBe('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT');
    // ...and a purge it does not know of still stops the reader, once the first message shows the gap.
    const stale = await consumeChanges(servers.nc, {
      stream: 'start-checks',
      after: 3,
      handler,
      streamPosition: { ...now, firstSeq: 1 },
    });
    expect((await failure(stale)).code).toBe('HEAPLESS_ERR_REPLICA_POSITION_PURGED');
  });

  it('stops with POSITION_PURGED when the stream is purged past the reader', async () => {
    const publisher = await streamWith('purged-live', 20);
    const held = gate();
    const all = recorder();
    const consumer = await consumeChanges(servers.nc, {
      stream: 'purged-live',
      after: 0,
      maxBatchMessages: 5,
      handler: async (batch) => {
        all.handler(batch);
        if (batch.lastSeq === 5) await held.closed;
      },
    });
    await all.reached(5);
    const jsm = await jetstreamManager(servers.nc);
    await jsm.streams.purge('purged-live', { seq: 15 }); // 6..14 are gone while the handler holds 1..5
    await publishRange(publisher, 21, 25);
    held.open();
    const err = await failure(consumer);
    expect(err.code).toBe('HEAPLESS_ERR_REPLICA_POSITION_PURGED');
    // The first pull brought 1..5 and no other was made while the handler held them.
    expect(all.seqs()).toEqual(range(1, 5));
    expect(consumer.position).toBe(5);
  });

  it('stops with SEQUENCE_GAP at a message deleted from the middle, after handling all before it', async () => {
    await streamWith('gap', 10);
    await (await jetstreamManager(servers.nc)).streams.deleteMessage('gap', 6);
    const all = recorder();
    const consumer = await consumeChanges(servers.nc, { stream: 'gap', after: 0, handler: all.handler });
    const err = await failure(consumer);
    expect(err.code).toBe('HEAPLESS_ERR_REPLICA_SEQUENCE_GAP');
    expect(err.message).toMatch(/no message 6/);
    expect(all.seqs()).toEqual(range(1, 5));
    expect(consumer.position).toBe(5);
  });

  it('stops with the payload error at a malformed message, and with SCHEMA_MISMATCH at another schema', async () => {
    const publisher = await streamWith('bad', 3);
    const js = jetstream(servers.nc);
    const h = headers();
    h.set('Heapless-Format', '1');
    h.set('Heapless-Schema', 's1');
    await js.publish('heapless.bad', Uint8Array.of(0x91, 0x92, 0x07, 0xa1, 0x61), { headers: h }); // op 7
    await publishRange(publisher, 5, 6);
    const all = recorder();
    const consumer = await consumeChanges(servers.nc, { stream: 'bad', after: 0, handler: all.handler });
    const err = await failure(consumer);
    expect(err.code).toBe('HEAPLESS_ERR_REPLICA_MALFORMED_MESSAGE');
    expect(err.message).toMatch(/^message 4: change 0: unknown op 7/);
    expect(all.seqs()).toEqual([1, 2, 3]);

    const other = recorder();
    const strict = await consumeChanges(servers.nc, { stream: 'bad', after: 0, schema: 's2', handler: other.handler });
    expect((await failure(strict)).code).toBe('HEAPLESS_ERR_REPLICA_SCHEMA_MISMATCH');
    expect(other.seqs()).toEqual([]);
  });

  it('ends with the handler error, not counting that batch', async () => {
    await streamWith('handler-error', 30);
    const boom = new Error('apply failed');
    const consumer = await consumeChanges(servers.nc, {
      stream: 'handler-error',
      after: 0,
      maxBatchMessages: 10,
      handler: (batch) => {
        if (batch.lastSeq > 10) throw boom;
      },
    });
    expect(await consumer.done.catch((e: unknown) => e)).toBe(boom);
    expect(consumer.position).toBe(10);
  });

  it('close() removes its consumer from the server; a closed connection ends the reader with CLOSED', async () => {
    await streamWith('cleanup', 5);
    const all = recorder();
    const consumer = await consumeChanges(servers.nc, { stream: 'cleanup', after: 0, handler: all.handler });
    await all.reached(5);
    const jsm = await jetstreamManager(servers.nc);
    expect((await jsm.consumers.list('cleanup').next()).length).toBe(1);
    await consumer.close();
    expect((await jsm.consumers.list('cleanup').next()).length).toBe(0);

    const own = await connectToNats({ servers: servers.nats.urls });
    const orphan = await consumeChanges(own, { stream: 'cleanup', after: 5, handler: () => {} });
    await own.close();
    expect((await failure(orphan)).code).toBe('HEAPLESS_ERR_REPLICA_CLOSED');
  });
});
