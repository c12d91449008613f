// Child process of engine-follower.test.ts: the writer. Writes `batches` atomic batches, each adding the key
// k/<i> and setting `count` to the number of k/ keys, so that every state it ever has keeps count == |k/*|; prints
// `acked <n>` once n batches have resolved (handed to the OS), compacts the whole range every 150 batches (deleting the
// tables readers were reading), then closes and prints `done`. argv: dir, batches.
import { Engine } from '@heapless/engine';

const [dir, batchesArg] = process.argv.slice(2);
const batches = Number(batchesArg);
const db = await Engine.open(dir, { writeBufferSize: 32 * 1024, targetFileSize: 16 * 1024, compression: 'none' });
const key = (i) => `k/${String(i).padStart(6, '0')}`;
const value = (i) => `v${i}-${'p'.repeat((i * 37) % 400)}`;
for (let i = 0; i < batches; i++) {
  await db.write([
    { type: 'put', key: key(i), value: value(i) },
    { type: 'put', key: 'count', value: String(i + 1) },
  ]);
  if ((i + 1) % 10 === 0) process.stdout.write(`acked ${i + 1}\n`);
  if ((i + 1) % 150 === 0) await db.compactRange();
}
await db.close();
process.stdout.write('done\n');
