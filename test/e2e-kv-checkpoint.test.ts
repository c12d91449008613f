import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KvActor, kvRoutes, publish, spawn } from '@heapless/actor';
import { connect } from '@heapless/client';
import { OffHeapMap } from '@heapless/offheap';
import { pack, unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const TOKEN = 'checkpoint-token-0123456789';
const root = mkdtempSync(join(tmpdir(), 'kv-checkpoint-'));
const data = join(root, 'data');
const checkpoints = join(root, 'checkpoints');

let server: Awaited<ReturnType<typeof publish>>;
let ref: ReturnType<typeof spawn<KvActor>>;
let kv: Awaited<ReturnType<typeof connect<typeof KvActor>>>;

beforeAll(async () => {
  const map = await OffHeapMap.open<string, unknown>({ dir: data, threads: 1 });
  ref = spawn(new KvActor(map, { checkpointRoot: checkpoints }));
  server = await publish(ref, { routes: kvRoutes, token: TOKEN });
  kv = await connect<typeof KvActor>(server.url, { token: TOKEN });
});
afterAll(async () => {
  await kv.close();
  await server.close();
  await ref.stop();
  rmSync(root, { recursive: true, force: true });
});

const post = (body: unknown, token: string | null = TOKEN) =>
  fetch(`${server.httpUrl}/v1/kv/_checkpoint`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });

/** The copy in `dir`, opened as a map: how it was filled and its entries. */
async function openCopy(dir: string) {
  const copy = await OffHeapMap.open<string, unknown>({ dir, threads: 1 });
  try {
    const entries = Object.fromEntries([...copy.keys()].sort().map((k) => [k, unpack(copy.getBytes(k)!)]));
    return { source: copy.openStats.source, entries };
  } finally {
    await copy.close();
  }
}

describe('KV checkpoint', () => {
  it('over the WebSocket: a copy under the checkpoint root that opens from its image and holds every write', async () => {
    for (let i = 0; i < 200; i++) await kv.set(`k${i}`, pack({ i }));
    await kv.delete('k7');
    const done = await kv.checkpoint('first');
    expect(done.dir).toBe(join(checkpoints, 'first'));
    // Writes after it go on in the live store only.
    await kv.set('after', pack(1));
    const copy = await openCopy(done.dir);
    expect(copy.source).toBe('image');
    expect(Object.keys(copy.entries)).toHaveLength(199);
    expect(copy.entries.k8).toEqual({ i: 8 });
    expect(copy.entries.k7).toBeUndefined();
    expect(copy.entries.after).toBeUndefined();
  });

  it('over HTTP behind the token: 401 without it, the copy with it', async () => {
    const refused = await post({ name: 'http' }, null);
    expect(refused.status).toBe(401);
    expect(readdirSync(checkpoints)).not.toContain('http');
    const ok = await post({ name: 'nested/http' });
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { dir: string; imageSequence: number };
    expect(body.dir).toBe(join(checkpoints, 'nested', 'http'));
    expect((await openCopy(body.dir)).entries.after).toEqual(1);
  });

  it('refuses names that leave the root, absolute paths, existing non-empty directories and non-strings', async () => {
    mkdirSync(join(checkpoints, 'full'), { recursive: true });
    writeFileSync(join(checkpoints, 'full', 'keep'), 'mine');
    for (const name of ['../escape', '/tmp/abs', 'a/../../escape', '.', '', 'full', 'x\0y', 42]) {
      await expect(kv.checkpoint(name as string), String(name)).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
    }
    expect(readdirSync(join(checkpoints, 'full'))).toEqual(['keep']);
    expect(readdirSync(root).sort()).toEqual(['checkpoints', 'data']);
    const bad = await post({ name: '../../etc' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { code: string }).code).toBe('BAD_ARGUMENTS');
  });

  it('refuses a name through a symbolic link planted under the root, an existing directory, and a long name', async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'kv-checkpoint-elsewhere-'));
    try {
      symlinkSync(elsewhere, join(checkpoints, 'link'));
      symlinkSync(data, join(checkpoints, 'link-data'));
      mkdirSync(join(checkpoints, 'empty'));
      const dataBefore = readdirSync(data).sort();
      for (const name of ['link', 'link/sub', 'link-data/sub', 'empty']) {
        await expect(kv.checkpoint(name), name).rejects.toMatchObject({ code: 'BAD_ARGUMENTS' });
      }
      expect(readdirSync(elsewhere)).toEqual([]);
      expect(readdirSync(data).sort()).toEqual(dataBefore);
      expect(readdirSync(join(checkpoints, 'empty'))).toEqual([]);
      // 200 characters, 400 bytes: too long a name, not a storage failure.
      const long = await post({ name: 'é'.repeat(200) });
      expect(long.status).toBe(400);
      expect(((await long.json()) as { code: string }).code).toBe('BAD_ARGUMENTS');
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('is FORBIDDEN where the operator configured no checkpoint root', async () => {
    const plain = spawn(new KvActor(await OffHeapMap.open<string, unknown>({ dir: join(root, 'other'), threads: 1 })));
    try {
      await expect(plain.checkpoint('x')).rejects.toMatchObject({ code: 'FORBIDDEN' });
    } finally {
      await plain.stop();
    }
  });
});
