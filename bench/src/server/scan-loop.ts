/**
 * The other client of the `get depth 1, ...` cases (scan-cases.ts), in a process of its own as another client would
 * be: connects to the URL given as argv[2], says `ready` over IPC, then until told `stop` either pages through every
 * key (argv[3] `scan`: pages of 100, each awaited, starting over at the end) or makes single gets one after another
 * (`gets`: the control, what any busy second client costs on this machine), then reports the keys it read and exits.
 */
import type { KvActor } from '@heapless/actor';
import { connect } from '@heapless/client';
import { keyOf } from './cases.js';

/** What the loop sends its parent. */
export type ScanLoopMessage = { t: 'ready' } | { t: 'done'; keys: number; seconds: number };

const PAGE = 100;
const records = Number(process.argv[4]);

async function main(): Promise<void> {
  const [url, mode] = process.argv.slice(2);
  if (url === undefined || (mode !== 'scan' && mode !== 'gets') || !(records > 0) || process.send === undefined) {
    throw new Error("scan-loop: run me with fork(file, [url, 'scan' | 'gets', records])");
  }
  const kv = await connect<typeof KvActor>(url, { reconnect: false });
  let scanning = true;
  process.once('message', () => {
    scanning = false;
  });
  process.send({ t: 'ready' } satisfies ScanLoopMessage);
  const started = performance.now();
  let keys = 0;
  let cursor: string | undefined;
  while (scanning) {
    if (mode === 'gets') {
      if ((await kv.get(keyOf((keys * 7919) % records))) === undefined) throw new Error('a preloaded key is missing');
      keys++;
      continue;
    }
    const page = await kv.scan({ cursor, limit: PAGE });
    keys += page.entries.length;
    cursor = page.cursor; // undefined at the end: the next page starts over
  }
  const seconds = (performance.now() - started) / 1000;
  await kv.close();
  process.send({ t: 'done', keys, seconds } satisfies ScanLoopMessage, () => process.disconnect());
}

main().catch((error: unknown) => {
  process.stderr.write(`scan-loop: ${String(error)}\n`);
  process.exit(1);
});
