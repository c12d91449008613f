// Child process of engine-crash.test.ts: writes keys k<i> (i = start, start+1, ...) in order until killed.
// argv: dir, mode ('sync' | 'nosync'). Prints "ack <i>" once the promise of write i resolved (sync: on disk; without
// sync: handed to the OS).
// Several writes are in flight at once (group commit), some as batches.
import { Engine } from '@heapless/engine';

const [dir, mode] = process.argv.slice(2);
const sync = mode === 'sync';
const db = await Engine.open(dir, {
  writeBufferSize: 16 * 1024,
  targetFileSize: 8 * 1024,
  level0CompactionTrigger: 2,
  maxBytesForLevelBase: 64 * 1024,
});
const value = (i) => `v${i}-${'x'.repeat(i % 97)}`;
// First, report what survived the previous kill: "recovered <n>" when exactly k0..k(n-1) are there with the right
// values, "bad <what>" otherwise. The parent checks n against the writes it saw acknowledged.
const present = [];
{
  const dec = new TextDecoder();
  for await (const [k, v] of db.iterator()) {
    const i = Number(dec.decode(k).slice(1));
    if (dec.decode(v) !== value(i)) {
      process.stdout.write(`bad value of k${i}\n`);
      process.exit(1);
    }
    present.push(i);
  }
  present.sort((a, b) => a - b);
  const hole = present.findIndex((i, at) => i !== at);
  if (hole >= 0) {
    process.stdout.write(`bad k${hole} is missing but k${present.at(-1)} is present\n`);
    process.exit(1);
  }
  process.stdout.write(`recovered ${present.length}\n`);
}
let next = present.length;
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
      const to = next; // not `next` itself: later writes of this round are not acknowledged by this one
      inflight.push(b.write({ sync }).then(() => ack(from, to)));
    } else {
      next++;
      inflight.push(db.put(`k${from}`, value(from), { sync }).then(() => ack(from, from + 1)));
    }
  }
  await Promise.all(inflight);
  if (!sync) await new Promise((r) => setImmediate(r));
}
