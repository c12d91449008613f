import { MAX_TIMER_MS } from '@heapless/engine';
import type { NatsConnection } from '@nats-io/nats-core';
import { describe, expect, it } from 'vitest';
import { consumeChanges } from './change/change-consumer.js';
import { ChangePublisher } from './change/change-publisher.js';
import { readStreamPosition } from './change/change-stream.js';
import { CheckpointStore } from './checkpoint/checkpoint-store.js';
import { durationMs } from './duration.js';
import { followerSettings } from './follow/follower-options.js';

// Never used: every call below must fail its option check before it touches the connection.
const nc = {} as NatsConnection;
const TOO_LONG = MAX_TIMER_MS + 1;

describe('durationMs', () => {
  it('takes an integer from min to 2^31 - 1', () => {
    expect(durationMs('t', 1)).toBe(1);
    expect(durationMs('t', MAX_TIMER_MS)).toBe(MAX_TIMER_MS);
    expect(durationMs('t', 1_000, 1_000)).toBe(1_000);
  });

  it('refuses what a Node timer would clamp to 1 ms, naming the option', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, TOO_LONG, 3e9]) {
      expect(() => durationMs('timeoutMs', bad)).toThrow(
        expect.objectContaining({
          code: 'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT',
          message: expect.stringContaining('timeoutMs'),
        }),
      );
    }
    expect(() => durationMs('fetchExpiresMs', 999, 1_000)).toThrow(/fetchExpiresMs must be an integer from 1000/);
  });
});

describe('every option that becomes a timer is checked', () => {
  const invalid = expect.objectContaining({ code: 'HEAPLESS_ERR_REPLICA_INVALID_ARGUMENT' });

  it('ChangePublisher timeoutMs', () => {
    expect(() => new ChangePublisher(nc, { stream: 'S', schema: 'v1', timeoutMs: TOO_LONG })).toThrow(invalid);
  });

  it('consumeChanges fetchExpiresMs and timeoutMs', async () => {
    const options = { stream: 'S', after: 0, handler: () => {} };
    await expect(consumeChanges(nc, { ...options, fetchExpiresMs: TOO_LONG })).rejects.toThrow(/fetchExpiresMs/);
    await expect(consumeChanges(nc, { ...options, timeoutMs: TOO_LONG })).rejects.toThrow(invalid);
  });

  it('readStreamPosition timeoutMs', async () => {
    await expect(readStreamPosition(nc, 'S', { timeoutMs: TOO_LONG })).rejects.toThrow(invalid);
  });

  it('CheckpointStore timeoutMs', async () => {
    await expect(CheckpointStore.open(nc, { bucket: 'b', timeoutMs: TOO_LONG })).rejects.toThrow(invalid);
  });

  it("a follower's fetchExpiresMs", () => {
    expect(() => followerSettings({ nc, dir: '/d', stream: 'S', schema: 'v1', fetchExpiresMs: TOO_LONG })).toThrow(
      /fetchExpiresMs/,
    );
  });
});
