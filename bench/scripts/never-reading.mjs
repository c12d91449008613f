// node bench/scripts/never-reading.mjs [N] (after a build): N clients that never read, each pipelining 4096 gets of 256 KiB; prints the server's RSS growth.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connect as tcpConnect } from 'node:net';
import { connect } from '@heapless/client';
import { pack } from 'msgpackr';

const N = Number(process.argv[2] ?? 100);
const proc = spawn(
  process.execPath,
  [
    new URL('../../packages/actor/dist/cli.js', import.meta.url).pathname,
    'serve',
    '--memory',
    '--port',
    '0',
    '--log-level',
    'info',
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const url = await new Promise((r) => {
  let b = '';
  proc.stdout.on('data', (d) => {
    b += d;
    for (const l of b.split('\n')) {
      try {
        const j = JSON.parse(l);
        if (j.msg === 'listening') r(j);
      } catch {}
    }
  });
});
const port = Number(new URL(url.http).port);
const metric = async (name) => {
  const t = `\n${await (await fetch(`${url.http}/metrics`)).text()}`;
  const i = t.indexOf(`\n${name} `);
  return Number(t.slice(i + name.length + 2, t.indexOf('\n', i + 1)));
};
const kv = await connect(url.url, { timeoutMs: 60000 });
const value = pack(new Uint8Array(256 * 1024 - 8));
await Promise.all(Array.from({ length: 64 }, (_, i) => kv.set(`big:${i}`, value)));
for (let r = 0; r < 4; r++) await Promise.all(Array.from({ length: 64 }, (_, i) => kv.get(`big:${i}`)));
const before = await metric('heapless_memory_bytes{kind="rss"}');
const frame = (calls) => {
  const p = pack(calls);
  const h = Buffer.alloc(10);
  h[0] = 0x82;
  h[1] = 0x80 | 127;
  h.writeBigUInt64BE(BigInt(p.length), 2);
  return Buffer.concat([h, Buffer.alloc(4), p]);
};
const sockets = [];
for (let c = 0; c < N; c++) {
  const s = tcpConnect({ port, host: '127.0.0.1' });
  s.pause();
  s.on('error', () => {});
  sockets.push(s);
  s.write(
    `GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: heapless.v1\r\n\r\n`,
  );
  for (let f = 0; f < 16; f++)
    s.write(frame(Array.from({ length: 256 }, (_, i) => [f * 256 + i + 1, 'get', [`big:${i % 64}`]])));
}
let last = -1,
  peak = 0;
for (;;) {
  await new Promise((r) => setTimeout(r, 1000));
  const g = await metric('heapless_calls_total{method="get",outcome="ok"}');
  peak = Math.max(peak, await metric('heapless_memory_bytes{kind="rss"}'));
  if (g === last) break;
  last = g;
}
const after = await metric('heapless_memory_bytes{kind="rss"}');
const t0 = performance.now();
await kv.get('big:1');
const lat = performance.now() - t0;
console.log(
  JSON.stringify({
    clients: N,
    rssBeforeMiB: +(before / 2 ** 20).toFixed(1),
    rssAfterMiB: +(after / 2 ** 20).toFixed(1),
    peakMiB: +(peak / 2 ** 20).toFixed(1),
    grownPerClientMiB: +((Math.max(after, peak) - before) / N / 2 ** 20).toFixed(2),
    paused: await metric('heapless_ws_paused_connections'),
    replyBytes: await metric('heapless_ws_reply_bytes'),
    getsAnswered: last,
    otherClientGetMs: +lat.toFixed(2),
  }),
);
for (const s of sockets) s.destroy();
await kv.close();
proc.kill('SIGKILL');
