/**
 * The packages' README uses that the packaging check (pack-check.mjs) runs in a project of its own, as script text:
 * each expects a `load(specifier)` (an import or a require) defined before it.
 */
/**
 * The embedded packages' README uses (struct, engine, level, offheap), for Node and Bun. The persisted map is
 * reopened from its image, and the script prints the loader that read it and when (`Date.now()`), for the figure
 * of how long a project takes from `npm install` to its first mapped open.
 */
export const EMBEDDED_USES = `
const { mkdtempSync, rmSync, writeFileSync } = await load('node:fs');
const { tmpdir } = await load('node:os');
const { join } = await load('node:path');
const { pathToFileURL } = await load('node:url');
const dir = mkdtempSync(join(tmpdir(), 'heapless-use-'));
try {
  const { StructLayout, textDecoderReader, utf8Type } = await load('@heapless/struct');
  const errors = {
    layout: (m) => new TypeError(m),
    value: (m) => new TypeError(m),
    overflow: (m) => new RangeError(m),
    size: (m) => new RangeError(m),
  };
  const User = new StructLayout(
    { id: 'u32', name: utf8Type(24, errors) },
    { errors, readUtf8: textDecoderReader(new TextDecoder()) },
  );
  if (User.decode(User.encode({ id: 7, name: 'ada' })).name !== 'ada') throw new Error('@heapless/struct: decode');

  const { Engine } = await load('@heapless/engine');
  const db = await Engine.open(join(dir, 'engine'));
  await db.put('user:1', 'Ada');
  if (new TextDecoder().decode(db.getSync('user:1')) !== 'Ada') throw new Error('@heapless/engine: get');
  await db.close();

  const { HeaplessLevel } = await load('@heapless/level');
  const level = new HeaplessLevel(join(dir, 'level'), { valueEncoding: 'json' });
  await level.put('user:1', { name: 'Ada' });
  if ((await level.get('user:1')).name !== 'Ada') throw new Error('@heapless/level: get');
  await level.close();

  const { OffHeapMap, struct, utf8 } = await load('@heapless/offheap');
  const users = new OffHeapMap({ threads: 2 });
  for (let i = 0; i < 1000; i++) users.set('u:' + i, { name: 'Ada', age: i % 100 });
  if (users.get('u:1').age !== 1) throw new Error('@heapless/offheap: get');
  // A scan on the worker pool, its function in a module of the project's own.
  writeFileSync(join(dir, 'older.mjs'), 'export default (c, min) => { let n = 0; while (c.next()) if (c.value.age > min) n++; return n; };');
  const counts = await users.scan({ module: pathToFileURL(join(dir, 'older.mjs')), arg: 49 });
  if (counts.reduce((a, b) => a + b, 0) !== 500) throw new Error('@heapless/offheap: scan counted ' + counts);
  await users.close();

  const Point = struct({ id: 'u32', name: utf8(24) });
  let points = await OffHeapMap.open({ dir: join(dir, 'map'), struct: Point });
  points.set('p:1', { id: 1, name: 'Ada' });
  await points.close();
  points = await OffHeapMap.open({ dir: join(dir, 'map'), struct: Point });
  console.log('first open from the image: ' + points.stats().imageLoader + ' at ' + Date.now());
  const view = points.view();
  if (!points.locate('p:1', view) || view.name !== 'Ada') throw new Error('@heapless/offheap: reopen');
  await points.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
`;

/** The server packages' uses, for Node: replica's entry points, an actor published and called by the client. */
export const SERVER_USES = `
const { CheckpointStore, Follower } = await load('@heapless/replica');
if (typeof CheckpointStore !== 'function' || typeof Follower !== 'function') throw new Error('@heapless/replica');

const { Actor, publish, spawn } = await load('@heapless/actor');
const { connect } = await load('@heapless/client');
class Counter extends Actor {
  static exposed = ['add'];
  n = 0;
  add(d) {
    return (this.n += d);
  }
}
const ref = spawn(new Counter(), { mailbox: 1024, overflow: 'wait' });
await ref.add(1);
const server = await publish(ref, { port: 0, token: 's3cret' });
const counter = await connect(server.url, { token: 's3cret' });
const [a, b] = await Promise.all([counter.add(1), counter.add(2)]);
if (a !== 2 || b !== 4) throw new Error('@heapless/client: add answered ' + a + ', ' + b);
await counter.close();
await server.close();
await ref.stop();
`;

/** The client's use against a running `heapless serve` (HEAPLESS_USE_URL, token s3cret), for Bun. */
export const CLIENT_USE = `
const { connect } = await load('@heapless/client');
const kv = await connect(process.env.HEAPLESS_USE_URL, { token: 's3cret' });
await kv.set('user:1', new TextEncoder().encode('Ada'));
if (new TextDecoder().decode(await kv.get('user:1')) !== 'Ada') throw new Error('@heapless/client: get');
await kv.close();
`;
