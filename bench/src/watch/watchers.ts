/**
 * The watcher process of the `watch` benchmark (forked by its workload): `open` starts N watchers of every key,
 * each over its own WebSocket with the typed client (`watch(...).batches()`), counting the changes received and resuming from its last
 * sequence after a WATCH_OVERFLOW; `report` answers the counts; `close` stops them. Kept out of the writer's
 * process so that decoding changes does not slow the writer's own client.
 */
import type { KvActor } from '@heapless/actor';
import { connect, HeaplessError } from '@heapless/client';
import type { FromWatchers, ToWatchers } from './watcher-messages.js';

type Kv = Awaited<ReturnType<typeof connect<typeof KvActor>>>;

class Watcher {
  received = 0;
  last = -1;
  overflows = 0;
  #stopped = false;
  #stream: ReturnType<Kv['watch']> | null = null;
  readonly done: Promise<void>;

  constructor(readonly kv: Kv) {
    this.done = this.#run();
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const w = this.kv.watch('', this.last < 0 ? undefined : { fromSequence: this.last });
      this.#stream = w;
      try {
        const head = (await w.opened) as { sequence: number };
        if (this.last < 0) this.last = head.sequence;
        // Batches, as a consumer of thousands of changes a second would take them: one promise per arrival.
        for await (const changes of w.batches()) {
          this.received += changes.length;
          this.last = changes[changes.length - 1]![0];
        }
      } catch (e) {
        if (this.#stopped) return;
        if (e instanceof HeaplessError && e.code === 'WATCH_OVERFLOW') {
          this.overflows++;
          continue;
        }
        throw e;
      }
    }
  }

  get opened(): Promise<unknown> {
    return this.#stream!.opened;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#stream?.return();
    await this.kv.close();
  }
}

let watchers: Watcher[] = [];
const send = (m: FromWatchers) => process.send!(m);

process.on('message', (m: ToWatchers) => {
  void (async () => {
    try {
      if (m.type === 'open') {
        const kvs = await Promise.all(
          Array.from({ length: m.count }, () => connect<typeof KvActor>(m.url, { reconnect: false })),
        );
        watchers = kvs.map((kv) => new Watcher(kv));
        await Promise.all(watchers.map((w) => w.opened));
        send({ type: 'opened' });
      } else if (m.type === 'report') {
        let received = 0;
        let overflows = 0;
        let min = Number.POSITIVE_INFINITY;
        for (const w of watchers) {
          received += w.received;
          overflows += w.overflows;
          min = Math.min(min, w.last);
        }
        send({ type: 'report', received, minSequence: watchers.length === 0 ? -1 : min, overflows });
      } else {
        await Promise.all(watchers.map((w) => w.stop()));
        await Promise.all(watchers.map((w) => w.done.catch(() => {})));
        watchers = [];
        send({ type: 'closed' });
      }
    } catch (e) {
      send({ type: 'failed', message: String((e as Error).stack ?? e) });
    }
  })();
});
