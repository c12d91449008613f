// Change streams and the publisher against a real nats-server: creating and checking streams, positions after
// purges, message ids that make a retried publish count once, the stored bytes as FORMAT.md says, and a publish
// that fails with UNAVAILABLE within its timeout while the server is down.

import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { describe, expect, it } from 'vitest';
import { ChangePublisher, connectToNats, deleteChange, ensureChangeStream, ReplicaError, setChange } from '../index.js';
import { decodeChanges, readStreamPosition, resumeFrom, verifyChangeStream } from '../internal.js';
import { startNatsServer } from '../testing/nats-server.js';
import { natsForTests, rejectionCode, retryUnavailable } from '../testing/replica-support.js';

const servers = natsForTests(startNatsServer);

const value = (n: number) => Uint8Array.from(Buffer.from(`value ${n}`));

describe('change streams', () => {
  it('creates a stream, accepts the same configuration again and refuses another one', async () => {
    const created = await ensureChangeStream(servers.nc, { name: 'created', duplicateWindowMs: 60_000 });
    expect(created).toMatchObject({ stream: 'created', firstSeq: 0, lastSeq: 0, messages: 0 });
    await ensureChangeStream(servers.nc, { name: 'created', duplicateWindowMs: 60_000 });
    await verifyChangeStream(servers.nc, { name: 'created', duplicateWindowMs: 60_000 });

    const other = ensureChangeStream(servers.nc, { name: 'created', duplicateWindowMs: 30_000, storage: 'memory' });
    await expect(other).rejects.toThrow(/dedup window of 60000 ms, not 30000 ms; file storage, not memory/);
    expect(await rejectionCode(ensureChangeStream(servers.nc, { name: 'created', subject: 'other.subject' }))).toBe(
      'HEAPLESS_ERR_REPLICA_STREAM_MISMATCH',
    );
    expect(await rejectionCode(verifyChangeStream(servers.nc, { name: 'created' }))).toBe(
      'HEAPLESS_ERR_REPLICA_STREAM_MISMATCH',
    );
    // Nothing was changed on the way.
    const info = await (await jetstreamManager(servers.nc)).streams.info('created');
    expect(info.config.duplicate_window).toBe(60_000 * 1e6);
    expect(info.config.subjects).toEqual(['heapless.created']);
  });

  it('reports a missing stream, bad names and a replica count a single server cannot hold', async () => {
    expect(await rejectionCode(verifyChangeStream(servers.nc, { name: 'missing' }))).toBe(
      'HEAPLESS_ERR_REPLICA_STREAM_NOT_FOUND',
    );
    expect(await rejectionCode(readStreamPosition(servers.nc, 'missing'))).toBe(
      'HEAPLESS_ERR_REPLICA_STREAM_NOT_FOUND',
    );
    expect(await rejectionCode(ensureChangeStream(servers.nc, { name: 'a.b' }))).toBe(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
    );
    expect(await rejectionCode(ensureChangeStream(servers.nc, { name: 'r3', replicas: 3 }))).toBe(
      'HEAPLESS_ERR_REPLICA_NATS_ERROR',
    );
  });

  it('tells a follower whether its next message was purged, and its lag', async () => {
    await ensureChangeStream(servers.nc, { name: 'purged' });
    const publisher = new ChangePublisher(servers.nc, { stream: 'purged', schema: 's1' });
    for (let i = 1; i <= 10; i++) await publisher.publish([setChange(`k${i}`, value(i))]);
    expect(resumeFrom(await readStreamPosition(servers.nc, 'purged'), 4)).toEqual({ ok: true, lag: 6 });
    const jsm = await jetstreamManager(servers.nc);
    await jsm.streams.purge('purged', { seq: 7 }); // keeps 7..10
    const position = await readStreamPosition(servers.nc, 'purged');
    expect(position).toMatchObject({ firstSeq: 7, lastSeq: 10, messages: 4 });
    expect(resumeFrom(position, 4)).toEqual({ ok: false, reason: 'purged' });
    expect(resumeFrom(position, 6)).toEqual({ ok: true, lag: 4 });
    expect(resumeFrom(position, 11)).toEqual({ ok: false, reason: 'ahead' });
  });
});

describe('ChangePublisher', () => {
  it('stores one message per publish with the headers and payload of FORMAT.md, and acks its sequence', async () => {
    await ensureChangeStream(servers.nc, { name: 'format' });
    const publisher = new ChangePublisher(servers.nc, { stream: 'format', schema: 'users-v1' });
    const first = await publisher.publish([setChange('a', value(1)), deleteChange('b')], { msgId: 'w-1' });
    const second = await publisher.publish([deleteChange('a')]);
    expect(first).toEqual({ seq: 1, duplicate: false, msgId: 'w-1' });
    expect(second.seq).toBe(2);
    expect(second.msgId).toMatch(/^\S+$/);

    const stored = await (await jetstreamManager(servers.nc)).streams.getMessage('format', { seq: 1 });
    expect(stored!.subject).toBe('heapless.format');
    expect(stored!.header.get('Heapless-Format')).toBe('1');
    expect(stored!.header.get('Heapless-Schema')).toBe('users-v1');
    expect(stored!.header.get('Nats-Msg-Id')).toBe('w-1');
    const changes = decodeChanges(stored!.data);
    expect(changes.map((c) => [c.type, c.key, c.value && Buffer.from(c.value).toString()])).toEqual([
      ['set', 'a', 'value 1'],
      ['delete', 'b', undefined],
    ]);
  });

  it('stores a publish retried with the same message id once, and acks it with the first sequence', async () => {
    await ensureChangeStream(servers.nc, { name: 'dedup' });
    const publisher = new ChangePublisher(servers.nc, { stream: 'dedup', schema: 's1' });
    const first = await publisher.publish([setChange('k', value(1))], { msgId: 'retry-me' });
    await publisher.publish([setChange('k', value(2))], { msgId: 'another' });
    const again = await publisher.publish([setChange('k', value(1))], { msgId: 'retry-me' });
    expect(again).toEqual({ seq: first.seq, duplicate: true, msgId: 'retry-me' });
    expect(await readStreamPosition(servers.nc, 'dedup')).toMatchObject({ lastSeq: 2, messages: 2 });
  });

  it('publishes over a connection that builds no stack trace per request in advance; a caller may ask for them', async () => {
    // With its async traces on, nats.js makes two Errors (their stacks captured) for every request it sends, so
    // that a failure shows who asked: a publish paid for both, acknowledged or not. Seen from outside, the stack of
    // a failed request names the caller only when they were built in advance.
    async function requestFromCaller(nc: NatsConnection): Promise<string | undefined> {
      return nc.request('nobody.listens.here', undefined, { timeout: 2_000 }).then(
        () => undefined,
        (err: Error) => err.stack,
      );
    }
    expect(await requestFromCaller(servers.nc)).not.toMatch(/requestFromCaller/);
    const traced = await connectToNats({ servers: servers.nats.urls, noAsyncTraces: false });
    try {
      expect(await requestFromCaller(traced)).toMatch(/requestFromCaller/);
    } finally {
      await traced.close();
    }
  });

  it('refuses what cannot be published before sending anything', async () => {
    await ensureChangeStream(servers.nc, { name: 'refused' });
    const publisher = new ChangePublisher(servers.nc, {
      stream: 'refused',
      schema: 's1',
      limits: { maxValueBytes: 4 * 1024 * 1024 },
    });
    // max_payload is 1 MiB by default: a value of 1 MiB cannot fit with its headers.
    expect(await rejectionCode(publisher.publish([setChange('big', new Uint8Array(1024 * 1024))]))).toBe(
      'HEAPLESS_ERR_REPLICA_MESSAGE_TOO_LARGE',
    );
    expect(await rejectionCode(publisher.publish([]))).toBe('HEAPLESS_ERR_REPLICA_TOO_MANY_CHANGES');
    expect(await rejectionCode(publisher.publish([deleteChange('k')], { msgId: 'has space' }))).toBe(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
    );
    expect((await readStreamPosition(servers.nc, 'refused')).lastSeq).toBe(0);
    expect(() => new ChangePublisher(servers.nc, { stream: 'refused', schema: 'bad schema' })).toThrow(ReplicaError);
    publisher.close();
    expect(await rejectionCode(publisher.publish([deleteChange('k')]))).toBe('HEAPLESS_ERR_REPLICA_CLOSED');
  });

  it('fails with UNAVAILABLE when no stream takes the subject', async () => {
    const publisher = new ChangePublisher(servers.nc, { stream: 'nostream', schema: 's1', timeoutMs: 300 });
    expect(await rejectionCode(publisher.publish([deleteChange('k')]))).toBe('HEAPLESS_ERR_REPLICA_UNAVAILABLE');
  });

  it('fails with UNAVAILABLE within its timeout while the server is down, and works again once it is back', async () => {
    await ensureChangeStream(servers.nc, { name: 'outage' });
    const publisher = new ChangePublisher(servers.nc, { stream: 'outage', schema: 's1', timeoutMs: 500 });
    await publisher.publish([setChange('k', value(1))], { msgId: 'before' });
    const node = servers.nats.nodes[0]!;
    await node.stop();
    const err = await publisher.publish([setChange('k', value(2))], { msgId: 'during' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReplicaError);
    expect((err as ReplicaError).code).toBe('HEAPLESS_ERR_REPLICA_UNAVAILABLE');
    expect((err as ReplicaError).message).toMatch(/publish during to outage within 500 ms/);
    await node.start();
    // The same write retried with its id, as a caller does after UNAVAILABLE, is stored once.
    const retried = await retryUnavailable(() => publisher.publish([setChange('k', value(2))], { msgId: 'during' }));
    const again = await publisher.publish([setChange('k', value(2))], { msgId: 'during' });
    expect(again).toEqual({ ...retried, duplicate: true });
    expect(await readStreamPosition(servers.nc, 'outage')).toMatchObject({ lastSeq: 2, messages: 2 });
  });
});
