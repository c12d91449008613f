// Child process of engine-crash.test.ts: writes keys k<i> (i = start, start+1, ...) in order until killed.
// argv: dir, mode ('sync' | 'nosync'), start. Prints "ack <i>" once write i is acknowledged (sync mode: durable).
// Several writes are in flight at once (group commit), some as batches.
import { Engine } from '@heapless/engine';

const [dir, mode, startArg] = process.argv.slice(2);
const sync = mode === 'sync';
const db = await Engine.open(dir, {
  writeBufferSize: 16 * 1024,
  targetFileSize: 8 * 1024,
  level0CompactionTrigger: 2,
  maxBytesForLevelBase: 64 * 1024,
});
process.stdout.write('open\n');
const value = (i) => `v${i}-${'x'.repeat(i % 97)}`;
let next = Number(startArg);
let out = '';
const ack = (from, to) => {
  for (let i = from; i < to; i++) out += `ack ${i}\n`;
  if (out.length > 0) {
    process.stdout.write(out);
    out = '';
  }
};
for (;;) {
  const inflight = [];
  for (let w = 0; w < 8; w++) {
    const from = next;
    if (w % 3 === 2) {
      const b = db.batch();
      for (let j = 0; j < 5; j++) b.put(`k${next}`, value(next++));
      inflight.push(b.write({ sync }).then(() => ack(from, next)));
    } else {
      next++;
      inflight.push(db.put(`k${from}`, value(from), { sync }).then(() => ack(from, from + 1)));
    }
  }
  await Promise.all(inflight);
  if (!sync) await new Promise((r) => setImmediate(r));
}
