// Child process of engine-lifecycle.test.ts: open, write enough to start the worker threads, wait a random while,
// close; `cycles` times over one directory. Prints "done <cycles>" and exits 0, unless the process aborts (V8's
// fatal errors cannot be caught, hence a child). argv: dir, cycles, seed.
//
// The waits (0-60 ms: mostly timers, some a synchronous spin, as when a long replay or a busy server blocks the event
// loop, some none) put close at every moment of the threads' start: a terminate requested while a thread is still
// booting takes effect where its JavaScript starts running, so even an early close can land in the thread loading
// its module, the moment that used to abort the process.
import { Engine } from '@heapless/engine';

const [dir, cyclesArg, seedArg] = process.argv.slice(2);
const cycles = Number(cyclesArg);
let s = Number(seedArg) >>> 0 || 1;
const random = () => {
  s ^= s << 13;
  s ^= s >>> 17;
  s ^= s << 5;
  return (s >>> 0) / 2 ** 32;
};
const spin = (ms) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

for (let i = 0; i < cycles; i++) {
  const db = await Engine.open(dir, { writeBufferSize: 4096 });
  // A quarter of the 4 KiB memtable: the engine starts its worker threads. Synced, so that close's own sync of the
  // WAL has nothing left to write and reaches the threads right after the wait.
  const batch = db.batch();
  for (let j = 0; j < 4; j++) batch.put(`k${j}`, `cycle ${i} ${'v'.repeat(300)}`);
  await batch.write({ sync: true });
  const r = random();
  const wait = random() * 60;
  if (r < 0.7) await new Promise((resolve) => setTimeout(resolve, wait));
  else if (r < 0.9) spin(wait);
  await db.close();
  const threads = db.stats().workerThreads;
  if (threads !== 0) throw new Error(`cycle ${i}: ${threads} worker threads after close`);
}
process.stdout.write(`done ${cycles}\n`);
