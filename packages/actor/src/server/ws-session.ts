import { CLOSE_CODES, type ServerHello } from '@heapless/client/protocol';
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket } from 'ws';
import type { ActorHandle } from '../runtime/actor-handle.js';
import { Session, type SessionLimits, type SessionSocket } from './session.js';

export type { SessionLimits, SessionLoad } from './session.js';

/** A `ws` WebSocket as a session's socket: a frame is one binary message, a stream's message two fragments. */
class WsSocket implements SessionSocket {
  constructor(readonly ws: WebSocket) {}

  get open(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  send(frame: Uint8Array, done?: () => void): void {
    this.ws.send(frame, done);
  }

  sendParts(head: Uint8Array, body: Uint8Array, done: () => void): void {
    this.ws.send(head, { binary: true, fin: false });
    this.ws.send(body, { binary: true, fin: true }, done);
  }

  pause(): void {
    this.ws.pause();
  }

  resume(): void {
    this.ws.resume();
  }

  ping(): void {
    this.ws.ping();
  }

  close(code: number, reason: string): void {
    this.ws.close(code, reason);
  }

  terminate(): void {
    this.ws.terminate();
  }
}

/**
 * One WebSocket connection to a published actor (FORMAT.md): a {@link Session} fed by `ws`'s events. A text frame
 * closes it with 1003 `TEXT_FRAME`; pongs are signs of life.
 */
export class WsSession extends Session {
  constructor(ws: WebSocket, handle: ActorHandle, hello: ServerHello, limits: SessionLimits, log: FastifyBaseLogger) {
    super(new WsSocket(ws), handle, hello, limits, log);
    ws.once('close', () => this.socketClosed());
    ws.on('message', (data, isBinary) => {
      if (isBinary) this.frame(data as Buffer);
      else {
        this.heard();
        this.refuse(CLOSE_CODES.UNSUPPORTED_DATA, 'TEXT_FRAME');
      }
    });
    ws.on('pong', () => this.heard());
    ws.on('error', (e) => log.debug({ err: e }, 'websocket error'));
  }
}
