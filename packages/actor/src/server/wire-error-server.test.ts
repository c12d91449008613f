// What a caller and the server's log see of an error whose code is no table's: a code spelled like a package's
// (HEAPLESS_ERR_...) is a fault of the server, INTERNAL and logged; one spelled like a wire code is not taken as one.
import { connect, HeaplessError } from '@heapless/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Actor } from '../runtime/actor.js';
import { spawn } from '../runtime/spawn.js';
import { type Published, publish } from './publish.js';

class Faulty extends Actor {
  static override readonly exposed = ['fail'] as const;
  fail(code: string): void {
    throw Object.assign(new Error(`failed with ${code}`), { code });
  }
}

const logged: string[] = [];
let server: Published;
let stopActor: () => Promise<void>;

beforeAll(async () => {
  const ref = spawn(new Faulty());
  stopActor = () => ref.stop();
  server = await publish(ref, { logger: { level: 'error', stream: { write: (line: string) => logged.push(line) } } });
});
afterAll(async () => {
  await server.close();
  await stopActor();
});

/** The error lines logged while `f` runs. */
async function errorsLoggedBy(f: () => Promise<unknown>): Promise<string[]> {
  const from = logged.length;
  await f();
  return logged.slice(from).filter((line) => JSON.parse(line).level === 50);
}

async function codeOf(call: Promise<unknown>): Promise<string> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(HeaplessError);
  return (err as HeaplessError).code;
}

describe('errors of no table, over the wire', () => {
  it('WebSocket: a package-style code of no table is INTERNAL and logged; a wire-spelled one is ACTOR_ERROR', async () => {
    const client = await connect<typeof Faulty>(server.url);
    try {
      const lines = await errorsLoggedBy(async () => {
        expect(await codeOf(client.fail('HEAPLESS_ERR_ENGINE_NOPE'))).toBe('INTERNAL');
      });
      expect(lines.length).toBe(1);
      expect(lines[0]).toContain('HEAPLESS_ERR_ENGINE_NOPE');
      expect(
        await errorsLoggedBy(async () => expect(await codeOf(client.fail('UNAVAILABLE'))).toBe('ACTOR_ERROR')),
      ).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it('HTTP: the same, with the message kept', async () => {
    const call = (code: string) =>
      fetch(`${server.httpUrl}/v1/call/fail`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify([code]),
      });
    const lines = await errorsLoggedBy(async () => {
      const res = await call('HEAPLESS_ERR_REPLICA_NOPE');
      expect(res.status).toBe(500);
      expect(await res.json()).toMatchObject({ code: 'INTERNAL', message: 'failed with HEAPLESS_ERR_REPLICA_NOPE' });
    });
    expect(lines.length).toBe(1);
    const res = await call('KEY_TOO_LARGE');
    expect(await res.json()).toMatchObject({ code: 'ACTOR_ERROR', message: 'failed with KEY_TOO_LARGE' });
  });
});
