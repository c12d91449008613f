// A follower process for the kill -9 suite: follows a stream into a map in DIR and counts, per key, the changes it
// applies (in the same atomic batch as the changes, as the in-process tests do); prints a line per batch before it
// is written, so the suite can kill it in the middle of applying.
// With BUCKET and MAX_REPLAY it may load a checkpoint from that bucket, and prints its log lines (`log <message>`),
// so that the suite can kill it while it downloads one.
// Usage: node replica-follow-child.mjs NATS_URL DIR STREAM [BUCKET MAX_REPLAY]
import { CheckpointStore, connectToNats, Follower } from '@heapless/replica';
import { pack, unpack } from 'msgpackr';

const [url, dir, stream, bucket, maxReplay] = process.argv.slice(2);
const nc = await connectToNats({ servers: [url] });
const line = (_details, message) => process.stdout.write(`log ${message}\n`);
const loading =
  bucket === undefined
    ? {}
    : {
        checkpoints: await CheckpointStore.open(nc, { bucket }),
        maxReplay: Number(maxReplay),
        log: { info: line, warn: line },
      };
let follower;
follower = await Follower.open({
  nc,
  dir,
  stream,
  schema: 'v1',
  maxBatchMessages: 16,
  ...loading,
  onBatch(messages, b) {
    const counts = new Map();
    for (const m of messages)
      for (const c of m.changes) {
        const k = `applied:${c.key}`;
        const stored = follower.map.getBytes(k);
        counts.set(k, (counts.get(k) ?? (stored === undefined ? 0 : unpack(stored))) + 1);
      }
    for (const [k, n] of counts) b.setBytes(k, pack(n));
    process.stdout.write(`batch ${messages[0].seq} ${messages.at(-1).seq}\n`);
  },
});
process.stdout.write(`start ${follower.position} ${follower.start.kind}\n`);
