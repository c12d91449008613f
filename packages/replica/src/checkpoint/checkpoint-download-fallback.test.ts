// A checkpoint download where direct writes cannot have their aligned buffers — a runtime without WebAssembly
// (`node --jitless`), or an address-space limit too small for a WebAssembly.Memory (`ulimit -v`) — writes the map
// image through the page cache instead, and the data comes back whole: the package loads, the image still checks
// itself on the way in, and the map opens from it with every record.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAP_IMAGE_FILE, OffHeapMap } from '@heapless/offheap';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointStore } from '../index.js';
import { startNatsServer } from '../testing/nats-server.js';
import { closedMap, dirContents, natsForTests } from '../testing/replica-support.js';

const servers = natsForTests(startNatsServer);
let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'heapless-download-fallback-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The download, in a child process: prints whether the image came with its proof. */
const CHILD = `
const [url, bucket, schema, id, dest, image] = process.argv.slice(1);
const { CheckpointStore, connectToNats } = await import('@heapless/replica');
const nc = await connectToNats({ servers: [url] });
const store = await CheckpointStore.open(nc, { bucket });
const { verifiedImage } = await store.download({ schema, id }, dest, { mapImage: image });
console.log(JSON.stringify({ verified: verifiedImage !== undefined, wasm: typeof WebAssembly }));
await nc.close();
`;

/** Runs `command` (argv), resolving with its stdout; rejects with its stderr when it fails. */
function run(command: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0]!, command.slice(1), { cwd: new URL('.', import.meta.url).pathname });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${err}`))));
  });
}

describe('a checkpoint download without aligned memory for direct writes', () => {
  it.each([
    ['node --jitless (no WebAssembly)', (node: string[]) => [process.execPath, '--jitless', ...node]],
    [
      'ulimit -v 6000000 (no room to reserve a WebAssembly.Memory on Node 20 and 22)',
      (node: string[]) => ['bash', '-c', 'ulimit -v 6000000 && exec "$0" "$@"', process.execPath, ...node],
    ],
  ])('%s: the image is written through the page cache and the map opens whole', async (_, command) => {
    const bucket = `fallback-${work.length}-${Math.random().toString(36).slice(2, 8)}`;
    const store = await CheckpointStore.open(servers.nc, { bucket });
    const source = join(work, `${bucket}-source`);
    const model = await closedMap(source, 20_000);
    const manifest = await store.upload(source, { schema: 'm', position: 1 });
    const dest = join(work, `${bucket}-dest`);
    const args = [servers.nats.nodes[0]!.url, bucket, 'm', manifest.id, dest, MAP_IMAGE_FILE];
    const out = await run(command(['--input-type=module', '-e', CHILD, ...args]));
    expect(JSON.parse(out.trim().split('\n').at(-1)!)).toMatchObject({ verified: true });
    expect(dirContents(dest)).toEqual(dirContents(source));
    const opened = await OffHeapMap.open<string, string>({ dir: dest });
    try {
      expect(new Map(opened.entries())).toEqual(model);
    } finally {
      await opened.close();
    }
  });
});
