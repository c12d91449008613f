import type { ErrorCode } from '@heapless/client/protocol';
import type { ChangeVisitor, MapChanges } from '@heapless/offheap';
import { describe, expect, it } from 'vitest';
import type { PushSink } from '../runtime/push-stream.js';
import { KvWatchHub } from './kv-watch.js';

describe('KvWatchHub', () => {
  it('ends every watch with WATCH_OVERFLOW and stops following once the change feed lost changes', async () => {
    let lost: ((reason: string) => void) | undefined;
    let unsubscribed = 0;
    const changes = {
      lastSequence: 5,
      subscribe(_visit: ChangeVisitor, onLost: (reason: string) => void): () => void {
        lost = onLost;
        return () => {
          unsubscribed++;
        };
      },
    } as unknown as MapChanges;
    const hub = new KvWatchHub({ changes, durable: async () => {} });
    const ends: string[] = [];
    const sink: PushSink = {
      push() {},
      pendingBytes: 0,
      end(code: ErrorCode, message: string) {
        ends.push(`${code}: ${message}`);
      },
    };
    (await hub.open(new Uint8Array(0), undefined)).open(sink);
    (await hub.open(Uint8Array.of(0x61), undefined)).open(sink);
    expect(hub.subscribed).toBe(true);
    lost?.('the WALs no longer hold them');
    expect(ends).toEqual([
      expect.stringMatching(/^WATCH_OVERFLOW: .*the WALs no longer hold them/),
      expect.stringMatching(/^WATCH_OVERFLOW: /),
    ]);
    expect(hub.size).toBe(0);
    expect(hub.subscribed).toBe(false);
    expect(unsubscribed).toBe(1);
    hub.close();
  });
});
