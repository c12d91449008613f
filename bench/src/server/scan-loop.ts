/**
 * The other client of `get depth 1, during a full scan` (scan-cases.ts), in a process of its own as another client
 * would be: connects to the URL given as argv[2], says `ready` over IPC, pages through every key (pages of 100,
 * each awaited, starting over at the end) until told `stop`, then reports the keys it read and exits.
 */
import type { KvActor } from '@heapless/actor';
import { connect } from '@heapless/client';

/** What the loop sends its parent. */
export type ScanLoopMessage = { t: 'ready' } | { t: 'done'; keys: number; seconds: number };

const PAGE = 100;

async function main(): Promise<void> {
  const url = process.argv[2];
  if (url === undefined || process.send === undefined) throw new Error('scan-loop: run me with fork(file, [url])');
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
