import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import {
  ERROR_CODES,
  FrameDecoder,
  FrameEncoder,
  type ReplyMessage,
  type ServerHello,
} from '@heapless/client/protocol';
import fc from 'fast-check';
import type { FastifyBaseLogger } from 'fastify';
import { pack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { handleOf } from '../runtime/actor-handle.js';
import { spawn } from '../runtime/spawn.js';
import { WsSession } from './ws-session.js';

/**
 * WsSession over a real `ws` server, fed by a WebSocket client written by hand on a TCP socket, so that a frame can
 * be cut anywhere (in its header, its mask, its payload) and sent in pieces, and so that what comes back (replies,
 * the close frame's code and reason) is read as bytes.
 */

class Echo {
  static readonly exposed = ['echo', 'fail', 'hold'] as const;
  readonly held: (() => void)[] = [];
  echo(x: unknown): unknown {
    return x;
  }
  fail(): never {
    throw new Error('boom');
  }
  hold(x: number): Promise<number> {
    return new Promise((resolve) => this.held.push(() => resolve(x)));
  }
}

const HELLO: ServerHello = { v: 1, maxFrameBytes: 1 << 20, maxCallsPerFrame: 8, maxInFlight: 64 };
const LIMITS = { maxInFlight: 64, maxRequestBytes: 1 << 20, maxReplyBytes: 1 << 20 };
const quiet = () => {};
const log = { info: quiet, debug: quiet, warn: quiet, error: quiet, fatal: quiet, trace: quiet, silent: quiet };
const logger = { ...log, level: 'silent', child: () => logger } as unknown as FastifyBaseLogger;

const echo = new Echo();
const ref = spawn(echo);
const sessions: WsSession[] = [];
let http: Server;
let wss: WebSocketServer;
let port: number;
beforeAll(async () => {
  wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, clientTracking: false });
  http = createServer();
  http.on('upgrade', (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) =>
      sessions.push(new WsSession(ws, handleOf(ref), HELLO, LIMITS, logger)),
    ),
  );
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  port = (http.address() as { port: number }).port;
});
afterAll(async () => {
  await Promise.all(sessions.map((s) => s.shutdown()));
  wss.close();
  await new Promise((resolve) => http.close(resolve));
  await ref.stop();
});

/** A client frame (FIN set): `opcode`, masked with a random key as RFC 6455 requires of clients. */
function clientFrame(opcode: number, payload: Uint8Array): Buffer {
  const n = payload.length;
  const head = n < 126 ? Buffer.alloc(2) : n < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
  head[0] = 0x80 | opcode;
  if (n < 126) head[1] = 0x80 | n;
  else if (n < 65536) {
    head[1] = 0x80 | 126;
    head.writeUInt16BE(n, 2);
  } else {
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(BigInt(n), 2);
  }
  const mask = randomBytes(4);
  const body = Buffer.from(payload);
  for (let i = 0; i < n; i++) body[i]! ^= mask[i & 3]!;
  return Buffer.concat([head, mask, body]);
}
const binary = (payload: Uint8Array) => clientFrame(2, payload);

/** One raw peer: the handshake done, server frames parsed as they arrive (server frames are not masked). */
class Peer {
  readonly replies: ReplyMessage[] = [];
  close: { code: number; reason: string } | undefined;
  readonly closed: Promise<void>;
  #buf = Buffer.alloc(0);
  #upgraded = false;
  #onFrame: (() => void) | undefined;
  readonly #decoder = new FrameDecoder();

  private constructor(readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => this.#onData(d));
    socket.on('error', () => {});
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  static async open(): Promise<Peer> {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect({ host: '127.0.0.1', port }, () => resolve(s));
      s.once('error', reject);
    });
    const peer = new Peer(socket);
    socket.write(
      `GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
    await peer.until(() => peer.replies.length > 0); // the hello, id 0
    expect(peer.replies.shift()).toEqual([0, HELLO]);
    return peer;
  }

  /** Sends `bytes` in pieces cut at `cuts` (byte offsets), each piece its own write, one event-loop turn apart. */
  async send(bytes: Buffer, cuts: number[] = []): Promise<void> {
    let from = 0;
    for (const cut of [...new Set(cuts)].filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b)) {
      this.socket.write(bytes.subarray(from, cut));
      from = cut;
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.socket.write(bytes.subarray(from));
  }

  /** Resolves once `check` holds, re-checked at every frame from the server (and at its close). */
  until(check: () => boolean): Promise<void> {
    return new Promise((resolve) => {
      const test = () => {
        if (!check()) return;
        this.#onFrame = undefined;
        resolve();
      };
      this.#onFrame = test;
      this.closed.then(test);
      test();
    });
  }

  #onData(d: Buffer): void {
    this.#buf = Buffer.concat([this.#buf, d]);
    if (!this.#upgraded) {
      const end = this.#buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      expect(this.#buf.subarray(0, 12).toString()).toBe('HTTP/1.1 101');
      this.#buf = this.#buf.subarray(end + 4);
      this.#upgraded = true;
    }
    for (;;) {
      const b = this.#buf;
      if (b.length < 2) return;
      let n = b[1]! & 0x7f;
      let at = 2;
      if (n === 126) {
        if (b.length < 4) return;
        n = b.readUInt16BE(2);
        at = 4;
      } else if (n === 127) {
        if (b.length < 10) return;
        n = Number(b.readBigUInt64BE(2));
        at = 10;
      }
      if (b.length < at + n) return;
      const payload = b.subarray(at, at + n);
      this.#buf = b.subarray(at + n);
      const opcode = b[0]! & 0x0f;
      if (opcode === 2) this.replies.push(...this.#decoder.decodeReplies(payload));
      if (opcode === 8) {
        this.close = { code: payload.readUInt16BE(0), reason: payload.subarray(2).toString() };
        this.socket.write(clientFrame(8, payload)); // answer the close, as a client must: the server then ends
      }
      this.#onFrame?.();
    }
  }
}

/** Bytes as a plain array, so that a Buffer received compares equal to the Uint8Array sent. */
const bytesAsArray = (v: unknown) => (v instanceof Uint8Array ? ['bytes', ...v] : v);

/** Resolves once `check` holds, re-checked every event-loop turn (a wait for state the server does not send). */
async function eventually(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setImmediate(resolve));
}

const encoder = new FrameEncoder();
const callFrame = (calls: unknown[][]) => binary(encoder.encodeDetached(calls));

describe('WsSession', () => {
  it('answers calls whatever the pieces their frames arrive in (property)', async () => {
    const value = fc.oneof(fc.string(), fc.integer(), fc.uint8Array({ maxLength: 300 }));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(value, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.nat(2000), { maxLength: 6 }),
        async (frames, cuts) => {
          const peer = await Peer.open();
          let id = 1;
          const want: ReplyMessage[] = [];
          const wire = frames.map((values) => {
            const calls = values.map((v) => [id++, 'echo', [v]]);
            for (const [callId, , args] of calls) want.push([callId as number, bytesAsArray((args as unknown[])[0])]);
            return callFrame(calls);
          });
          await peer.send(Buffer.concat(wire), cuts);
          await peer.until(() => peer.replies.length === want.length);
          const got = peer.replies.map(([callId, v]) => [callId, bytesAsArray(v)]);
          expect(got.sort((x, y) => (x[0] as number) - (y[0] as number))).toEqual(want);
          expect(peer.close).toBeUndefined();
          peer.socket.destroy();
          await peer.closed;
        },
      ),
      { numRuns: 40 },
    );
  });

  it('answers a bad call with its code and keeps the connection', async () => {
    const peer = await Peer.open();
    await peer.send(
      callFrame([
        [1, 42, []],
        [2, 'echo', 'not an array'],
        [3, 'nope', []],
        [4, 'fail', []],
        [5, 'echo', ['still here']],
      ]),
      [1, 3, 7],
    );
    await peer.until(() => peer.replies.length === 5);
    expect(peer.replies).toEqual([
      [1, ERROR_CODES.BAD_REQUEST.wire, expect.any(String)],
      [2, ERROR_CODES.BAD_REQUEST.wire, expect.any(String)],
      [3, ERROR_CODES.UNKNOWN_METHOD.wire, 'unknown method nope'],
      [4, ERROR_CODES.ACTOR_ERROR.wire, 'boom'],
      [5, 'still here'],
    ]);
    expect(peer.close).toBeUndefined();
    peer.socket.destroy();
  });

  // Each: a frame that breaks the protocol, the close code and reason it gets.
  const hostile: [string, Buffer, number, string][] = [
    ['a text frame', clientFrame(1, Buffer.from('[[1,"echo",[]]]')), 1003, 'TEXT_FRAME'],
    ['bytes that are not msgpack', binary(Uint8Array.of(0xc1)), 1007, 'BAD_FRAME'],
    ['msgpack that is not an array', binary(pack({ calls: [] })), 1007, 'BAD_FRAME'],
    ['a message without a valid id', binary(pack([[0, 'echo', []]])), 1007, 'BAD_FRAME'],
    ['a message of two elements', binary(pack([[1, 'echo']])), 1007, 'BAD_FRAME'],
    [
      'more calls than maxCallsPerFrame',
      callFrame(Array.from({ length: 9 }, (_, i) => [i + 1, 'echo', []])),
      1008,
      'TOO_MANY_CALLS',
    ],
  ];
  it.each(hostile)(
    'closes on %s with its code, after answering the frame before it',
    async (_, frame, code, reason) => {
      const peer = await Peer.open();
      const good = callFrame([[1, 'echo', ['first']]]);
      // The good frame and the bad one in one stream, cut inside the bad one's header and mask.
      await peer.send(Buffer.concat([good, frame]), [good.length + 1, good.length + 3, good.length + 5]);
      await peer.closed;
      expect(peer.replies).toEqual([[1, 'first']]);
      expect(peer.close).toEqual({ code, reason });
    },
  );

  it('stops reading at maxInFlight calls unanswered, and reads again once they are answered', async () => {
    const peer = await Peer.open();
    const session = sessions[sessions.length - 1]!;
    let id = 1;
    const frames = Array.from({ length: LIMITS.maxInFlight / 8 }, () =>
      callFrame(Array.from({ length: 8 }, () => [id, 'hold', [id++]])),
    );
    await peer.send(Buffer.concat(frames), [5, 100, 333]);
    await eventually(() => session.inFlight === LIMITS.maxInFlight);
    expect(session.load.paused).toBe(true);
    for (let answered = 0; answered < LIMITS.maxInFlight; answered++) {
      await eventually(() => echo.held.length > 0);
      echo.held.shift()!();
    }
    await peer.until(() => peer.replies.length === LIMITS.maxInFlight);
    expect(peer.replies.map((r) => r[1])).toEqual(Array.from({ length: LIMITS.maxInFlight }, (_, i) => i + 1));
    await eventually(() => !session.load.paused);
    await peer.send(callFrame([[id, 'echo', ['after']]]));
    await peer.until(() => peer.replies.length === LIMITS.maxInFlight + 1);
    expect(peer.replies.at(-1)).toEqual([id, 'after']);
    peer.socket.destroy();
  });

  it('on shutdown refuses new calls, answers the one in flight, then closes with 1001', async () => {
    const peer = await Peer.open();
    const session = sessions[sessions.length - 1]!;
    await peer.send(callFrame([[1, 'hold', [7]]]));
    await eventually(() => echo.held.length === 1);
    const done = session.shutdown();
    await peer.send(callFrame([[2, 'echo', ['late']]]));
    await peer.until(() => peer.replies.length === 1);
    expect(peer.replies).toEqual([[2, ERROR_CODES.SHUTTING_DOWN.wire, expect.any(String)]]);
    echo.held.shift()!();
    await done;
    await peer.closed;
    expect(peer.replies[1]).toEqual([1, 7]);
    expect(peer.close).toEqual({ code: 1001, reason: 'SHUTTING_DOWN' });
  });
});
