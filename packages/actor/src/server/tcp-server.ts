import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import {
  CLOSE_CODES,
  dataHeader,
  encodeClose,
  HEARTBEAT_RECORD,
  type ServerHello,
  TcpProtocolError,
  TcpRecordReader,
} from '@heapless/client/protocol';
import type { FastifyBaseLogger } from 'fastify';
import { ActorError } from '../errors.js';
import type { ActorHandle } from '../runtime/actor-handle.js';
import { tokenMatches } from './auth.js';
import type { TlsOptions } from './publish-options.js';
import { Session, type SessionLimits, type SessionSocket } from './session.js';

/** How long a refused peer gets to read our close record before its socket is destroyed. */
const REFUSAL_GRACE_MS = 2000;
/** Frames up to this size are copied behind their header and written once; larger ones go as two buffers. */
const COPY_BELOW_BYTES = 16 * 1024;

/**
 * A TCP socket as a session's socket: frames as length-prefixed records (FORMAT.md, "TCP"). It reads records itself
 * and hands them to its session, so that pausing stops at a record boundary: the records of a chunk after the one
 * that made the session pause wait for `resume()`.
 */
class TcpSocket implements SessionSocket {
  session: Session | null = null;
  #closeSent = false;
  #closeReceived = false;
  #paused = false;
  #draining = false;

  constructor(
    readonly socket: Socket,
    readonly reader: TcpRecordReader,
  ) {}

  get open(): boolean {
    return !this.#closeSent && !this.#closeReceived && !this.socket.destroyed;
  }

  send(frame: Uint8Array, done?: () => void): void {
    const s = this.socket;
    if (s.destroyed) {
      if (done !== undefined) queueMicrotask(done);
      return;
    }
    if (frame.length < COPY_BELOW_BYTES) {
      const b = Buffer.allocUnsafe(4 + frame.length);
      b.writeUInt32BE(frame.length, 0);
      b.set(frame, 4);
      s.write(b, done);
      return;
    }
    s.cork();
    s.write(dataHeader(frame.length));
    s.write(frame, done);
    s.uncork();
  }

  sendParts(head: Uint8Array, body: Uint8Array, done: () => void): void {
    const s = this.socket;
    if (s.destroyed) {
      queueMicrotask(done);
      return;
    }
    s.cork();
    s.write(dataHeader(head.length + body.length));
    s.write(head);
    s.write(body, done);
    s.uncork();
  }

  pause(): void {
    this.#paused = true;
    this.socket.pause();
  }

  resume(): void {
    this.#paused = false;
    this.socket.resume();
    // Records already read wait in the reader: handed over from a microtask, not inside the session's own call.
    if (this.reader.buffered > 0) queueMicrotask(() => this.drain());
  }

  ping(): void {
    if (!this.socket.destroyed) this.socket.write(HEARTBEAT_RECORD);
  }

  close(code: number, reason: string): void {
    if (this.#closeSent) return;
    this.#closeSent = true;
    if (!this.socket.destroyed) this.socket.end(encodeClose(code, reason));
  }

  terminate(): void {
    this.socket.destroy();
  }

  /** Hands every whole record read to the session, until it pauses or the connection ends. */
  drain(): void {
    const session = this.session;
    if (session === null || this.#draining) return;
    this.#draining = true;
    try {
      while (!this.#paused && !this.#closeReceived && !this.socket.destroyed) {
        const record = this.reader.next();
        if (record === null) return;
        if (record.close) {
          // The peer's close: answered with the same code, as a WebSocket close handshake does.
          this.#closeReceived = true;
          if (!this.#closeSent) {
            this.#closeSent = true;
            this.socket.end(encodeClose(record.code, ''));
          }
          return;
        }
        if (record.bytes.length === 0) session.heard();
        else session.frame(asBuffer(record.bytes));
        if (this.#closeSent) return; // the session refused the frame: read no further
      }
    } catch (e) {
      if (!(e instanceof TcpProtocolError)) throw e;
      session.heard();
      session.refuse(e.code, e.reason);
    } finally {
      this.#draining = false;
    }
  }
}

/**
 * A record as a Buffer over the same bytes: the reader copies a record that spans chunks into a plain Uint8Array,
 * and the actor's arguments (views of the frame) are Buffers over a WebSocket, so they are over TCP too.
 */
function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

/** What {@link listenTcp} needs of publish's resolved options. */
export interface TcpListenOptions {
  host: string;
  port: number;
  tls: TlsOptions | null;
  maxConnections: number;
  /** Time a connection has for the TLS handshake, and again for its preface. */
  handshakeTimeoutMs: number;
  /** The token's digest, or null for a server without a token. */
  expected: Buffer | null;
  hello: ServerHello;
  limits: SessionLimits;
  handle: ActorHandle;
  log: FastifyBaseLogger;
  /** A session was opened (after the preface and the token check). */
  opened(session: Session): void;
}

/** A listening TCP server of heapless records: `stopAccepting()`, shut its sessions down, then `close()`. */
export interface TcpListener {
  port: number;
  /** Stops accepting connections; those before their session (no preface yet) are destroyed. */
  stopAccepting(): void;
  /** Stops accepting, destroys every socket left, and resolves once the server has closed. */
  close(): Promise<void>;
}

/** Ends a connection refused before its session with a close record, and destroys it if the peer lingers. */
function refuse(socket: Socket, code: number, reason: string): void {
  if (socket.destroyed) return;
  const timer = setTimeout(() => socket.destroy(), REFUSAL_GRACE_MS);
  socket.once('close', () => clearTimeout(timer));
  socket.end(encodeClose(code, reason));
}

/**
 * Serves the actor over raw TCP (with `tls`, TLS) on `host:port`: each connection must send its preface within
 * `handshakeTimeoutMs`, presenting the token when the server has one; it then gets the hello and is a
 * {@link Session} like a WebSocket's. Rejects with the listen error (EADDRINUSE), or `HEAPLESS_ERR_ACTOR_INVALID_OPTION`
 * for a certificate `node:tls` refuses.
 */
export async function listenTcp(o: TcpListenOptions): Promise<TcpListener> {
  const sockets = new Set<Socket>();
  /** Connections without a session yet. */
  const waiting = new Set<Socket>();
  const onConnection = (socket: Socket): void => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', (e) => o.log.debug({ err: e }, 'tcp socket error'));
    socket.setNoDelay(true);
    waiting.add(socket);
    socket.once('close', () => waiting.delete(socket));
    const reader = new TcpRecordReader(o.hello.maxFrameBytes);
    const timer = setTimeout(() => {
      o.log.info({ remote: socket.remoteAddress }, 'tcp connection refused: no preface in time');
      socket.removeListener('data', onPreface);
      refuse(socket, CLOSE_CODES.POLICY, 'TIMEOUT');
    }, o.handshakeTimeoutMs);
    socket.once('close', () => clearTimeout(timer));
    const onPreface = (chunk: Buffer): void => {
      reader.push(chunk);
      let preface: ReturnType<TcpRecordReader['preface']>;
      try {
        preface = reader.preface();
      } catch (e) {
        if (!(e instanceof TcpProtocolError)) throw e;
        clearTimeout(timer);
        socket.removeListener('data', onPreface);
        refuse(socket, e.code, e.reason);
        return;
      }
      if (preface === null) return;
      clearTimeout(timer);
      socket.removeListener('data', onPreface);
      waiting.delete(socket);
      if (o.expected !== null && !tokenMatches(o.expected, preface.token)) {
        o.log.info({ remote: socket.remoteAddress }, 'tcp connection refused: missing or wrong token');
        refuse(socket, CLOSE_CODES.UNAUTHORIZED, 'UNAUTHORIZED');
        return;
      }
      const adapter = new TcpSocket(socket, reader);
      const session = new Session(adapter, o.handle, o.hello, o.limits, o.log);
      adapter.session = session;
      socket.once('close', () => session.socketClosed());
      socket.on('data', (c: Buffer) => {
        reader.push(c);
        adapter.drain();
      });
      o.opened(session);
      adapter.drain();
    };
    socket.on('data', onPreface);
  };

  let server: Server;
  if (o.tls === null) server = createServer(onConnection);
  else {
    try {
      server = createTlsServer(
        { cert: o.tls.cert, key: o.tls.key, handshakeTimeout: o.handshakeTimeoutMs },
        onConnection,
      );
    } catch (cause) {
      throw new ActorError('HEAPLESS_ERR_ACTOR_INVALID_OPTION', `tls: ${(cause as Error).message}`, { cause });
    }
    // A peer that fails or never finishes the handshake: its socket is destroyed by node:tls, nothing to answer.
    server.on('tlsClientError', (e) => o.log.debug({ err: e }, 'tls handshake failed'));
  }
  server.maxConnections = o.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  server.on('error', (e) => o.log.error({ err: e }, 'tcp server error'));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : o.port;
  const serverClosed = new Promise<void>((resolve) => server.once('close', () => resolve()));
  const stopAccepting = (): void => {
    if (server.listening) server.close();
    for (const s of waiting) s.destroy();
  };
  return {
    port,
    stopAccepting,
    async close() {
      stopAccepting();
      for (const s of sockets) s.destroy();
      await serverClosed;
    },
  };
}
