import { describe, expect, it } from 'vitest';
import { ReplicaError } from '../errors.js';
import { assertResumable, resumeFrom, type StreamPosition } from './change-stream.js';

const stream = (firstSeq: number, lastSeq: number, messages: number): StreamPosition => ({
  stream: 'S',
  firstSeq,
  lastSeq,
  messages,
  bytes: messages * 100,
});

describe('resumeFrom', () => {
  it('a new, empty stream resumes from 0 with no lag', () => {
    expect(resumeFrom(stream(0, 0, 0), 0)).toEqual({ ok: true, lag: 0 });
  });

  it('counts the lag from the position to the last sequence', () => {
    expect(resumeFrom(stream(1, 100, 100), 0)).toEqual({ ok: true, lag: 100 });
    expect(resumeFrom(stream(1, 100, 100), 60)).toEqual({ ok: true, lag: 40 });
    expect(resumeFrom(stream(41, 100, 60), 40)).toEqual({ ok: true, lag: 60 });
    expect(resumeFrom(stream(1, 100, 100), 100)).toEqual({ ok: true, lag: 0 });
  });

  it('is purged when position + 1 is no longer held', () => {
    expect(resumeFrom(stream(42, 100, 59), 40)).toEqual({ ok: false, reason: 'purged' });
    // Everything purged: the stream begins after its last sequence.
    expect(resumeFrom(stream(101, 100, 0), 99)).toEqual({ ok: false, reason: 'purged' });
    expect(resumeFrom(stream(101, 100, 0), 100)).toEqual({ ok: true, lag: 0 });
  });

  it('is ahead when the position is past the last sequence', () => {
    expect(resumeFrom(stream(0, 0, 0), 5)).toEqual({ ok: false, reason: 'ahead' });
    expect(resumeFrom(stream(1, 10, 10), 11)).toEqual({ ok: false, reason: 'ahead' });
  });

  it('assertResumable throws the matching codes, and refuses positions that are not positions', () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return (err as ReplicaError).code;
      }
    };
    expect(assertResumable(stream(1, 10, 10), 3)).toBe(7);
    expect(code(() => assertResumable(stream(5, 10, 6), 3))).toBe('HEAPLESS_ERR_REPLICA_POSITION_PURGED');
    expect(code(() => assertResumable(stream(1, 10, 10), 11))).toBe('HEAPLESS_ERR_REPLICA_POSITION_AHEAD');
    expect(code(() => resumeFrom(stream(1, 10, 10), -1))).toBe('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT');
    expect(code(() => resumeFrom(stream(1, 10, 10), 1.5))).toBe('HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT');
    expect(() => assertResumable(stream(5, 10, 6), 3)).toThrow(ReplicaError);
  });
});
