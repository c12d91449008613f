// Checkpoints in the JetStream object store of a real nats-server: a directory goes up and comes back byte for
// byte; listings give the newest per schema; prune keeps the newest N; and damage of every kind (an object
// replaced, a chunk added, an object missing, a manifest that is not JSON or that points outside the destination)
// is CHECKPOINT_CORRUPT with nothing at the destination and nothing left beside it.
import { createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAP_IMAGE_FILE, nativeStatus, OffHeapMap, VerifiedImage } from '@heapless/offheap';
import { DiscardPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointStore, ReplicaError } from '../index.js';
import { startNatsServer } from '../testing/nats-server.js';
import { closedMap, dirContents, natsForTests, rejectionCode } from '../testing/replica-support.js';

const servers = natsForTests(startNatsServer);
let work: string;
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'heapless-checkpoint-'));
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

/** A directory like an engine checkpoint: nested folders, an empty file, a file of several object chunks. */
function sourceDir(name: string): string {
  const dir = join(work, name);
  mkdirSync(join(dir, 'tables', 'level-1'), { recursive: true });
  writeFileSync(join(dir, 'MANIFEST-000007'), `manifest of ${name}`);
  writeFileSync(join(dir, 'empty.log'), '');
  // Like a map image: values that compress, over more than one frame.
  writeFileSync(join(dir, 'MAPIMAGE'), Buffer.from(`{"name":"listing","price":12.5} `.repeat(80_000)));
  writeFileSync(join(dir, 'tables', '000001.sst'), randomBytes(3 * 1024 * 1024 + 17));
  writeFileSync(join(dir, 'tables', 'level-1', '000002.sst'), randomBytes(1000));
  return dir;
}

/** The object store under the checkpoint store, to damage it. */
async function raw(bucket: string) {
  return new Objm(servers.nc).open(bucket);
}

/** Asserts that a failed download left neither the destination nor a partial directory in `work`. */
function nothingInstalled(dest: string) {
  expect(existsSync(dest)).toBe(false);
  expect(readdirSync(work).filter((name) => name.includes('.partial-'))).toEqual([]);
}

describe('CheckpointStore', () => {
  it.each(['lz4', 'none'] as const)(
    'uploads a directory (%s) and downloads it byte for byte, with its manifest',
    async (compression) => {
      const store = await CheckpointStore.open(servers.nc, { bucket: `roundtrip-${compression}` });
      const dir = sourceDir('src');
      const manifest = await store.upload(dir, { schema: 'users-v1', position: 1234, stream: 'changes', compression });
      expect(manifest).toMatchObject({ format: 2, schema: 'users-v1', position: 1234, stream: 'changes' });
      expect(manifest.id).toMatch(/^0000000000001234-/);
      const image = manifest.files.find((f) => f.path === 'MAPIMAGE')!;
      const table = manifest.files.find((f) => f.path === 'tables/000001.sst')!;
      if (compression === 'lz4') {
        // The image shrinks; the random table goes as raw frames (a 9-byte header per MiB).
        expect(image).toMatchObject({ encoding: 'lz4-frames' });
        expect(image.storedSize).toBeLessThan(image.size / 10);
        expect(table.storedSize).toBe(table.size + 4 * 9);
      } else {
        expect(manifest.files.every((f) => f.encoding === undefined && f.storedSize === undefined)).toBe(true);
      }
      expect(manifest.files.map((f) => f.path)).toEqual([
        'MANIFEST-000007',
        'MAPIMAGE',
        'empty.log',
        'tables/000001.sst',
        'tables/level-1/000002.sst',
      ]);
      expect(manifest.totalBytes).toBe(manifest.files.reduce((s, f) => s + f.size, 0));

      const newest = await store.newest('users-v1');
      expect(newest).toMatchObject({ id: manifest.id, schema: 'users-v1', position: 1234 });
      expect(await store.manifest(newest!)).toEqual(manifest);
      const dest = join(work, 'installed');
      expect((await store.download(newest!, dest)).manifest).toEqual(manifest);
      expect(dirContents(dest)).toEqual(dirContents(dir));
      nothingInstalledBeside(dest);
      // Named as a map image, a file is written around the page cache and checked as an image: these are not
      // images (no proof), and come back byte for byte all the same.
      for (const mapImage of ['MAPIMAGE', 'tables/000001.sst']) {
        const asImage = join(work, `as-image-${mapImage.length}`);
        const downloaded = await store.download(newest!, asImage, { mapImage });
        expect(downloaded).toEqual({ manifest, verifiedImage: undefined });
        expect(dirContents(asImage)).toEqual(dirContents(dir));
      }
    },
  );

  /** A closed map in `work/name` with 30,000 records, and the model of them. */
  async function closedMapIn(name: string): Promise<{ dir: string; model: Map<string, string> }> {
    const dir = join(work, name);
    return { dir, model: await closedMap(dir, 30_000) };
  }

  it('a map image downloaded as one checks itself on the way, and the map opens from it without reading it', async () => {
    const store = await CheckpointStore.open(servers.nc, { bucket: 'map-image' });
    const { dir, model } = await closedMapIn('map');
    const manifest = await store.upload(dir, { schema: 'm', position: 1 });
    const dest = join(work, 'installed');
    const { verifiedImage } = await store.download(manifest, dest, { mapImage: MAP_IMAGE_FILE });
    expect(verifiedImage).toBeInstanceOf(VerifiedImage);
    expect(dirContents(dest)).toEqual(dirContents(dir));
    const opened = await OffHeapMap.open<string, string>({ dir: dest, verifiedImage: verifiedImage! });
    try {
      const check = nativeStatus.imageLoader === 'mapped' ? 'stream' : 'open';
      expect(opened.openStats).toMatchObject({ source: 'image', imageCheck: check });
      expect(new Map(opened.entries())).toEqual(model);
    } finally {
      await opened.close();
    }
  });

  it('a published image that fails its own checksums gives no proof, and the map opens by a scan with every record', async () => {
    const store = await CheckpointStore.open(servers.nc, { bucket: 'bad-image' });
    const { dir, model } = await closedMapIn('bad');
    // Damaged before the upload: the stored object is what was published, so only the image's own checks see it.
    const image = join(dir, MAP_IMAGE_FILE);
    const bytes = readFileSync(image);
    bytes[bytes.length - 100]! ^= 0x10;
    writeFileSync(image, bytes);
    const manifest = await store.upload(dir, { schema: 'm', position: 1 });
    const dest = join(work, 'installed');
    const downloaded = await store.download(manifest, dest, { mapImage: MAP_IMAGE_FILE });
    expect(downloaded.verifiedImage).toBeUndefined();
    expect(dirContents(dest)).toEqual(dirContents(dir));
    const opened = await OffHeapMap.open<string, string>({ dir: dest });
    try {
      expect(opened.openStats.source).toBe('scan');
      expect(opened.openStats.imageRejected).toMatch(/checksum mismatch/);
      expect(new Map(opened.entries())).toEqual(model);
    } finally {
      await opened.close();
    }
  });

  it('prunes without leaving deletion markers: the bucket holds what the kept checkpoints need', async () => {
    const store = await CheckpointStore.open(servers.nc, { bucket: 'markers' });
    const dir = sourceDir('src');
    const messages = async () =>
      (await (await jetstreamManager(servers.nc)).streams.info('OBJ_markers')).state.messages;
    await store.upload(dir, { schema: 'a', position: 1 });
    const one = await messages();
    for (const position of [2, 3, 4]) await store.upload(dir, { schema: 'a', position });
    expect(await messages()).toBe(4 * one);
    expect(await store.prune('a', 1)).toHaveLength(3);
    // A delete would have left one marker per object of each pruned checkpoint on the stream for ever.
    expect(await messages()).toBe(one);
    expect((await store.list('a')).map((c) => c.position)).toEqual([4]);
    const back = join(work, 'back');
    await store.download((await store.newest('a'))!, back);
    expect(readFileSync(join(back, 'MANIFEST-000007'), 'utf8')).toBe('manifest of src');
  });

  it('lists the newest first per schema and prunes all but the newest N', async () => {
    const store = await CheckpointStore.open(servers.nc, { bucket: 'listing' });
    const dir = sourceDir('src');
    for (const position of [10, 30, 20]) await store.upload(dir, { schema: 'a', position });
    await store.upload(dir, { schema: 'b', position: 5 });
    expect((await store.list('a')).map((c) => c.position)).toEqual([30, 20, 10]);
    expect((await store.newest('b'))?.position).toBe(5);
    expect(await store.newest('c')).toBeUndefined();
    expect((await store.list()).map((c) => `${c.schema}@${c.position}`)).toEqual(['a@30', 'a@20', 'a@10', 'b@5']);

    const [, , oldest] = await store.list('a');
    const removed = await store.prune('a', 2);
    expect(removed).toEqual([oldest!.id]);
    expect((await store.list('a')).map((c) => c.position)).toEqual([30, 20]);
    const left = (await (await raw('listing')).list()).map((o) => o.name);
    expect(left.filter((name) => name.includes(oldest!.id))).toEqual([]);
    expect(await store.prune('b', 1)).toEqual([]);
    expect(await rejectionCode(store.prune('a', 0))).toBe('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT');
    // A checkpoint listed, then deleted by another publisher's prune, is skipped by a walk over the list.
    expect(await store.manifestIfPresent(oldest!)).toBeUndefined();
    expect(await rejectionCode(store.manifest(oldest!))).toBe('HEAPLESS_ERR_REPLICA_CHECKPOINT_NOT_FOUND');
    for (const position of [40, 50]) await store.upload(dir, { schema: 'a', position, stream: 's' });
    const listed = await store.list('a');
    expect(await store.prune('a', 1, { stream: 's' })).toHaveLength(1);
    expect(await Promise.all(listed.map((c) => store.manifestIfPresent(c).then((m) => m?.position)))).toEqual([
      50,
      undefined,
      30,
      20,
    ]);
  });

  it('reads a checkpoint whose manifest is of format 1 (files as they are)', async () => {
    const store = await CheckpointStore.open(servers.nc, { bucket: 'format1' });
    const dir = sourceDir('src');
    const manifest = await store.upload(dir, { schema: 's', position: 5, compression: 'none' });
    const v1 = { ...manifest, format: 1 };
    await (await raw('format1')).putBlob(
      { name: `checkpoints/s/${manifest.id}/manifest.json` },
      Buffer.from(JSON.stringify(v1)),
    );
    const dest = join(work, 'installed');
    expect((await store.download(manifest, dest)).manifest).toEqual(v1);
    expect(dirContents(dest)).toEqual(dirContents(dir));
  });

  it('damaged frames of a compressed file are CHECKPOINT_CORRUPT, and nothing is installed', async () => {
    const store = await CheckpointStore.open(servers.nc, { bucket: 'frames' });
    const manifest = await store.upload(sourceDir('src'), { schema: 's', position: 1 });
    const name = `checkpoints/s/${manifest.id}/files/MAPIMAGE`;
    const objects = await raw('frames');
    const stored = (await objects.getBlob(name))!;
    const dest = join(work, 'dest');
    const expectCorrupt = async (message: RegExp) => {
      const err = await store.download(manifest, dest).catch((e: unknown) => e as ReplicaError);
      expect((err as ReplicaError).code).toBe('HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT');
      expect((err as ReplicaError).message).toMatch(message);
      nothingInstalled(dest);
    };
    // Other stored bytes under the same manifest: the stored digest refuses them before any frame is read.
    await objects.putBlob({ name }, flip(stored, 100));
    await expectCorrupt(/MAPIMAGE: SHA-256 [0-9a-f]{64} stored, the manifest says/);

    // A manifest that agrees with damaged stored bytes (as a faulty writer would leave it): the frames refuse them.
    const agreeing = async (bytes: Uint8Array) => {
      await objects.putBlob({ name }, bytes);
      const storedSha256 = createHash('sha256').update(bytes).digest('hex');
      const files = manifest.files.map((f) =>
        f.path === 'MAPIMAGE' ? { ...f, storedSize: bytes.length, storedSha256 } : f,
      );
      const body = Buffer.from(JSON.stringify({ ...manifest, files }));
      await objects.putBlob({ name: `checkpoints/s/${manifest.id}/manifest.json` }, body);
    };
    const damaged: [Uint8Array, RegExp][] = [
      [flip(stored, 100), /MAPIMAGE: (an lz4 block|SHA-256 [0-9a-f]{64}, the manifest says)/],
      [flip(stored, 0), /MAPIMAGE: unknown frame kind/],
      [withUint32(stored, 1, 64 << 20), /MAPIMAGE: a frame of 67108864 plain bytes/],
      [withUint32(stored, 5, 3 << 20), /MAPIMAGE: a lz4 frame stores/],
      [stored.subarray(0, stored.length - 3), /MAPIMAGE: the object ends inside a frame/],
    ];
    for (const [bytes, message] of damaged) {
      await agreeing(bytes);
      await expectCorrupt(message);
    }
  });

  it('a file object replaced by other bytes is CHECKPOINT_CORRUPT, and nothing is installed', async () => {
    const store = await CheckpointStore.open(servers.nc, { bucket: 'replaced' });
    const manifest = await store.upload(sourceDir('src'), { schema: 's', position: 1, compression: 'none' });
    const name = `checkpoints/s/${manifest.id}/files/tables/000001.sst`;
    const size = manifest.files.find((f) => f.path === 'tables/000001.sst')!.size;
    await (await raw('replaced')).putBlob({ name }, randomBytes(size));
    const dest = join(work, 'dest');
    const err = await store.download(manifest, dest).catch((e: unknown) => e as ReplicaError);
    expect(err).toBeInstanceOf(ReplicaError);
    expect((err as ReplicaError).code).toBe('HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT');
    expect((err as ReplicaError).message).toMatch(/000001\.sst: SHA-256 [0-9a-f]{64} stored, the manifest says/);
    nothingInstalled(dest);
  });

  it('a chunk added to an object, and an object removed, are CHECKPOINT_CORRUPT', async () => {
    const store = await CheckpointStore.open(servers.nc, { bucket: 'chunks' });
    const manifest = await store.upload(sourceDir('src'), { schema: 's', position: 1 });
    const objects = await raw('chunks');
    const info = await objects.info(`checkpoints/s/${manifest.id}/files/tables/level-1/000002.sst`);
    await jetstream(servers.nc).publish(`$O.chunks.C.${info!.nuid}`, randomBytes(100));
    const dest = join(work, 'dest');
    const grown = await store.download(manifest, dest).catch((e: unknown) => e as ReplicaError);
    expect((grown as ReplicaError).code).toBe('HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT');
    expect((grown as ReplicaError).message).toMatch(/level-1\/000002\.sst: /);
    nothingInstalled(dest);

    // Files download several at once, so the missing one is shown in a checkpoint with nothing else wrong.
    const other = await store.upload(sourceDir('other'), { schema: 's', position: 2 });
    await objects.delete(`checkpoints/s/${other.id}/files/empty.log`);
    const err = await store.download(other, dest).catch((e: unknown) => e as ReplicaError);
    expect((err as ReplicaError).code).toBe('HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT');
    expect((err as ReplicaError).message).toMatch(/empty\.log: the manifest names it, it is missing/);
    nothingInstalled(dest);
  });

  it('a manifest that is not JSON, or that names a path outside the destination, is CHECKPOINT_CORRUPT', async () => {
    const store = await CheckpointStore.open(servers.nc, { bucket: 'manifests' });
    const objects = await raw('manifests');
    const id = '0000000000000009-hostile';
    await objects.putBlob({ name: `checkpoints/s/${id}/manifest.json` }, Buffer.from('{"format": 1, "id":'));
    expect((await store.newest('s'))?.id).toBe(id);
    expect(await rejectionCode(store.manifest({ schema: 's', id }))).toBe('HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT');

    const outside = {
      format: 1,
      id,
      schema: 's',
      position: 9,
      createdAt: new Date().toISOString(),
      files: [{ path: '../escaped', size: 3, sha256: 'a'.repeat(64) }],
      totalBytes: 3,
    };
    await objects.putBlob({ name: `checkpoints/s/${id}/manifest.json` }, Buffer.from(JSON.stringify(outside)));
    await objects.putBlob({ name: `checkpoints/s/${id}/files/../escaped` }, Buffer.from('bad'));
    const dest = join(work, 'dest');
    const err = await store.download({ schema: 's', id }, dest).catch((e: unknown) => e as ReplicaError);
    expect((err as ReplicaError).code).toBe('HEAPLESS_ERR_REPLICA_CHECKPOINT_CORRUPT');
    expect((err as ReplicaError).message).toMatch(/unsafe path "\.\.\/escaped"/);
    expect(existsSync(join(work, 'escaped'))).toBe(false);
    nothingInstalled(dest);
  });

  it('an upload that fails leaves nothing in the bucket: no object, no deletion marker, no chunk', async () => {
    const store = await CheckpointStore.open(servers.nc, { bucket: 'failed-upload' });
    const kept = await store.upload(sourceDir('kept'), { schema: 's', position: 1 });
    const stream = 'OBJ_failed-upload';
    const jsm = await jetstreamManager(servers.nc);
    const before = (await jsm.streams.info(stream)).state;
    // The fault: the bucket's stream refuses to grow by more than ~1 MiB, so the small files of the next upload
    // go in and its 3 MiB table fails part-way.
    const config = (await jsm.streams.info(stream)).config;
    await jsm.streams.update(stream, { ...config, max_bytes: before.bytes + 1024 * 1024, discard: DiscardPolicy.New });
    const failed = await store
      .upload(sourceDir('fails'), { schema: 's', position: 2, compression: 'none' })
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ReplicaError);
    expect((failed as ReplicaError).message).toMatch(/maximum bytes/);
    const after = (await jsm.streams.info(stream, { subjects_filter: '>' })).state;
    expect({ messages: after.messages, bytes: after.bytes }).toEqual({
      messages: before.messages,
      bytes: before.bytes,
    });
    expect((await store.list('s')).map((c) => c.id)).toEqual([kept.id]);
  });

  it('refuses what cannot be uploaded or downloaded, with typed errors', async () => {
    const store = await CheckpointStore.open(servers.nc, { bucket: 'refusals' });
    const dir = sourceDir('src');
    const manifest = await store.upload(dir, { schema: 's', position: 3 });
    mkdirSync(join(work, 'exists'));
    expect(await rejectionCode(store.download(manifest, join(work, 'exists')))).toBe(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
    );
    expect(await rejectionCode(store.download(manifest, join(work, 'no', 'parent')))).toBe(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
    );
    expect(await rejectionCode(store.download({ schema: 's', id: '0000000000000003-nothing' }, join(work, 'd')))).toBe(
      'HEAPLESS_ERR_REPLICA_CHECKPOINT_NOT_FOUND',
    );
    expect(await rejectionCode(store.upload(join(work, 'missing'), { schema: 's', position: 1 }))).toBe(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
    );
    expect(await rejectionCode(store.upload(dir, { schema: 'bad schema', position: 1 }))).toBe(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
    );
    symlinkSync(join(dir, 'empty.log'), join(dir, 'link'));
    expect(await rejectionCode(store.upload(dir, { schema: 's', position: 4 }))).toBe(
      'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
    );
    expect((await store.list('s')).map((c) => c.position)).toEqual([3]);
    expect(await rejectionCode(CheckpointStore.open(servers.nc, { bucket: 'absent', create: false }))).toBe(
      'HEAPLESS_ERR_REPLICA_CHECKPOINT_NOT_FOUND',
    );
  });
});

/** A copy of `bytes` with the byte at `at` inverted. */
function flip(bytes: Uint8Array, at: number): Uint8Array {
  const copy = Uint8Array.from(bytes);
  copy[at]! ^= 0xff;
  return copy;
}

/** A copy of `bytes` with a uint32le `value` at `at`. */
function withUint32(bytes: Uint8Array, at: number, value: number): Uint8Array {
  const copy = Buffer.from(bytes);
  copy.writeUInt32LE(value, at);
  return copy;
}

/** After a good download: the destination is there, and nothing partial beside it. */
function nothingInstalledBeside(dest: string) {
  expect(existsSync(dest)).toBe(true);
  expect(readdirSync(work).filter((name) => name.includes('.partial-'))).toEqual([]);
}
