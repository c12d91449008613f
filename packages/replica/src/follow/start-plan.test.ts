import { describe, expect, it } from 'vitest';
import { isReplicaError } from '../errors.js';
import type { FollowerState } from './follower-meta.js';
import { planStart, type StartFacts } from './start-plan.js';

const local = (position: number, schema = 'v1', stream = 's'): FollowerState => ({
  position,
  schema,
  stream,
  checkpoint: undefined,
});
const none: FollowerState = { position: undefined, schema: undefined, stream: undefined, checkpoint: undefined };
const streamAt = (firstSeq: number, lastSeq: number) => ({
  stream: 's',
  firstSeq,
  lastSeq,
  messages: Math.max(0, lastSeq - firstSeq + 1),
  bytes: 0,
});
const cp = (position: number) => ({ id: `${String(position).padStart(16, '0')}-x`, position });

function plan(facts: Partial<StartFacts>) {
  return planStart({
    local: none,
    schema: 'v1',
    stream: 's',
    streamPosition: streamAt(1, 100),
    maxReplay: 50,
    newest: undefined,
    ...facts,
  });
}

function code(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    if (isReplicaError(err)) return err.code;
    throw err;
  }
  return 'no error';
}

describe('planStart', () => {
  it.each([
    ['local data within max replay', { local: local(90) }, { kind: 'resume', position: 90, lag: 10 }],
    ['caught-up local data', { local: local(100) }, { kind: 'resume', position: 100, lag: 0 }],
    [
      'local data, NATS unreachable',
      { local: local(10), streamPosition: undefined },
      { kind: 'resume', lag: undefined },
    ],
    ['no local data, a checkpoint', { newest: cp(80) }, { kind: 'checkpoint', reason: 'no-local-data', position: 80 }],
    ['no local data, no checkpoint', {}, { kind: 'replay', reason: 'no-local-data' }],
    ['another schema', { local: local(90, 'v0'), newest: cp(70) }, { kind: 'checkpoint', reason: 'schema-changed' }],
    ['another schema, no checkpoint', { local: local(90, 'v0') }, { kind: 'replay', reason: 'schema-changed' }],
    [
      'another stream',
      { local: local(90, 'v1', 't'), newest: cp(70) },
      { kind: 'checkpoint', reason: 'stream-changed' },
    ],
    [
      'lag past max replay, newer checkpoint',
      { local: local(10), newest: cp(60) },
      { kind: 'checkpoint', reason: 'lag' },
    ],
    [
      'lag past max replay, older checkpoint',
      { local: local(10), newest: cp(5) },
      { kind: 'resume', position: 10, lag: 90 },
    ],
    ['lag past max replay, none', { local: local(10) }, { kind: 'resume', position: 10 }],
    [
      'purged, checkpoint',
      { local: local(10), streamPosition: streamAt(50, 100), newest: cp(60) },
      { kind: 'checkpoint', reason: 'purged' },
    ],
  ] as const)('%s', (_name, facts, expected) => {
    expect(plan(facts as Partial<StartFacts>)).toMatchObject(expected);
  });

  it.each([
    [
      'purged, no checkpoint',
      { local: local(10), streamPosition: streamAt(50, 100) },
      'HEAPLESS_ERR_REPLICA_POSITION_PURGED',
    ],
    [
      'empty follower, stream purged, no checkpoint',
      { streamPosition: streamAt(50, 100) },
      'HEAPLESS_ERR_REPLICA_POSITION_PURGED',
    ],
    ['local position past the stream end', { local: local(200) }, 'HEAPLESS_ERR_REPLICA_POSITION_AHEAD'],
    ['no local data, NATS unreachable', { streamPosition: undefined }, 'HEAPLESS_ERR_REPLICA_UNAVAILABLE'],
  ] as const)('%s: %s', (_name, facts, expected) => {
    expect(code(() => plan(facts as Partial<StartFacts>))).toBe(expected);
  });
});
