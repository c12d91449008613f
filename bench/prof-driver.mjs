import { fork } from 'node:child_process';
import { connect } from '@heapless/client';

const url = process.argv[2];
const count = Number(process.argv[3]);
const child = fork(new URL('./dist/watch/watchers.js', import.meta.url));
const ask = (m) =>
  new Promise((r) => {
    child.once('message', r);
    child.send(m);
  });
const kv = await connect(url, { reconnect: false });
if (count > 0) await ask({ type: 'open', url, count });
const value = Buffer.alloc(100, 120);
const t0 = performance.now();
let n = 0;
while (performance.now() - t0 < 6000) {
  const calls = [];
  for (let j = 0; j < 1000; j++) calls.push(kv.set(`key:${(n + j) % 100000}`, value));
  await Promise.all(calls);
  n += 1000;
}
console.log('sets/s', Math.round((n * 1000) / (performance.now() - t0)));
if (count > 0) await ask({ type: 'close' });
child.kill();
await kv.close();
