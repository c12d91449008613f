// Followers on a 3-node JetStream cluster (stream with 3 replicas): the stream leader is killed during writes and
// no acknowledged write is lost, both followers converge on the model; then every node is down: the followers'
// maps still answer, a write fails with UNAVAILABLE within its timeout; once the cluster is back the followers
// resume from their stored positions and converge with nothing missing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ChangePublisher, ensureChangeStream, Follower, setChange } from '../index.js';
import { countApplications, counters, ModelWriter, mapHex, modelHex } from '../testing/follow-support.js';
import { startNatsCluster } from '../testing/nats-server.js';
import { natsForTests, rejectionCode } from '../testing/replica-support.js';

const servers = natsForTests(() => startNatsCluster(3));
let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'heapless-follow-cluster-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function follow(name: string, stream: string): Promise<Follower> {
  let f: Follower | undefined;
  f = await Follower.open({
    nc: servers.nc,
    dir: join(work, name),
    stream,
    schema: 'v1',
    maxBatchMessages: 64,
    fetchExpiresMs: 2_000,
    onBatch: (messages, b) => countApplications(messages, b, f!.map),
  });
  return f;
}

it('loses no acknowledged write when a node is killed, serves reads with the cluster down, converges after', async () => {
  const stream = 'follow3';
  await ensureChangeStream(servers.nc, { name: stream, replicas: 3 });
  const a = await follow('a', stream);
  const b = await follow('b', stream);
  const writer = new ModelWriter(servers.nc, stream, 'v1', 150, 29);
  await writer.write(300, 1);
  // Kill the stream's leader in the middle of the writes, and bring it back.
  const jsm = await jetstreamManager(servers.nc);
  const leader = (await jsm.streams.info(stream)).cluster?.leader;
  const victim = servers.nats.nodes.find((n) => n.name === leader)!;
  const writing = writer.write(300, 1);
  while (writer.lastSeq < 350) await new Promise((r) => setTimeout(r, 5));
  await victim.kill();
  expect(writer.lastSeq).toBeLessThan(600); // killed while writes were going on
  await writing;
  await victim.start();
  await writer.write(100, 1);
  await Promise.all([a.waitCaughtUp(), b.waitCaughtUp()]);
  for (const f of [a, b]) {
    expect(f.position).toBe(writer.lastSeq);
    expect(mapHex(f.map)).toEqual(modelHex(writer.model));
    expect(counters(f.map)).toEqual(Object.fromEntries(writer.touches));
  }

  // Every node down: reads go on from the maps, a write fails with UNAVAILABLE within its timeout.
  const before = a.position;
  await Promise.all(servers.nats.nodes.map((n) => n.kill()));
  const [someKey, someValue] = [...writer.model][0]!;
  expect(Buffer.from(a.map.getBytes(someKey)!).equals(Buffer.from(someValue))).toBe(true);
  expect(b.map.size).toBe(a.map.size);
  const publisher = new ChangePublisher(servers.nc, { stream, schema: 'v1', timeoutMs: 1_000 });
  expect(await rejectionCode(publisher.publish([setChange('lost', new Uint8Array([1]))]))).toBe(
    'HEAPLESS_ERR_REPLICA_UNAVAILABLE',
  );
  expect(a.status().caughtUp).toBe(false);
  expect(a.position).toBe(before);

  // Back up: writes go on, both followers resume from their positions and converge.
  await Promise.all(servers.nats.nodes.map((n) => n.start()));
  await writer.write(100, 1);
  await Promise.all([a.waitCaughtUp(), b.waitCaughtUp()]);
  for (const f of [a, b]) {
    expect(mapHex(f.map)).toEqual(modelHex(writer.model));
    expect(counters(f.map)).toEqual(Object.fromEntries(writer.touches));
    expect(f.status().failure).toBe(null);
  }
  publisher.close();
  await Promise.all([a.close(), b.close()]);
});
