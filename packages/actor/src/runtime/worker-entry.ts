// The main module of a worker started by spawnInWorker: loads the actor's module, constructs the actor, and runs it
// in a local mailbox fed by the parent's batched calls. See worker-messages.ts for the messages.
import { parentPort, workerData } from 'node:worker_threads';
import { Mailbox } from './mailbox.js';
import { exposedNames, methodTable } from './method-table.js';
import type { ReplySink } from './reply-sink.js';
import { type FromWorker, serializeError, type ToWorker } from './worker-messages.js';

interface WorkerSetup {
  moduleUrl: string;
  exportName: string;
  args: unknown[];
  expose: string[] | undefined;
}

const port = parentPort!;
const setup = workerData as WorkerSetup;
const send = (m: FromWorker) => port.postMessage(m);

let replies: [number, 0 | 1, unknown][] = [];
let flushQueued = false;
function flush(): void {
  flushQueued = false;
  if (replies.length === 0) return;
  const r = replies;
  replies = [];
  try {
    send({ t: 'replies', r });
  } catch {
    // A result that cannot be cloned (a function, say): send each one alone so only the guilty call fails.
    for (const one of r) {
      try {
        send({ t: 'replies', r: [one] });
      } catch (e) {
        send({ t: 'replies', r: [[one[0], 0, serializeError(e)]] });
      }
    }
  }
}
function queue(reply: [number, 0 | 1, unknown]): void {
  replies.push(reply);
  if (!flushQueued) {
    flushQueued = true;
    setImmediate(flush);
  }
}
const sink: ReplySink = {
  resolve: (id, value) => queue([id, 1, value]),
  reject: (id, error) => queue([id, 0, serializeError(error)]),
};

let mailbox: Mailbox;
try {
  const mod = (await import(setup.moduleUrl)) as Record<string, unknown>;
  const Ctor = mod[setup.exportName];
  if (typeof Ctor !== 'function') throw new Error(`${setup.moduleUrl} has no exported class ${setup.exportName}`);
  const instance = new (Ctor as new (...a: unknown[]) => object)(...setup.args);
  const table = methodTable(instance);
  const exposed = exposedNames(instance, table, setup.expose);
  // The parent enforces the mailbox bound; here the queue only holds what the parent let through.
  mailbox = new Mailbox(instance, table, exposed, { mailbox: Number.MAX_SAFE_INTEGER });
  send({ t: 'ready', methods: [...table.keys()], exposed: [...exposed] });
} catch (e) {
  send({ t: 'failed', e: serializeError(e) });
  port.close();
}

port.on('message', (m: ToWorker) => {
  if (m.t === 'calls') {
    for (const [id, method, args] of m.c) mailbox.post(method, args, sink, id);
    return;
  }
  mailbox.stop({ drain: m.drain }).then(
    () => {
      flush();
      send({ t: 'stopped' });
      port.close();
    },
    (e) => {
      flush();
      send({ t: 'stopped', e: serializeError(e) });
      port.close();
    },
  );
});
