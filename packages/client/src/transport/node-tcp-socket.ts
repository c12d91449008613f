import { isIP, connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { CLOSE_CODES } from '../protocol/close-codes.js';
import { DEFAULT_MAX_FRAME_BYTES } from '../protocol/limits.js';
import type { CertificateAuthority } from './certificate-authority.js';
import { nodeCa } from './node-ca.js';
import type { SocketLike } from './socket-like.js';
import {
  encodeClose,
  encodePreface,
  HEARTBEAT_RECORD,
  TCP_HEADER_BYTES,
  TcpProtocolError,
  TcpRecordReader,
} from './tcp-records.js';

/** The code of a connection that ended without a close record, as a WebSocket reports it. */
const NO_CLOSE = 1006;
/** How long the server gets to answer our close record before the socket is destroyed. */
const CLOSE_GRACE_MS = 2000;
/** Frames up to this size are copied behind their header and written once. */
const COPY_BELOW_BYTES = 16 * 1024;

/** Whether `url` names raw TCP (`tcp://`) or TLS (`tls://`) rather than a WebSocket. */
export function isTcpUrl(url: string): boolean {
  return url.startsWith('tcp://') || url.startsWith('tls://');
}

/**
 * A heapless connection over raw TCP or TLS (FORMAT.md, "TCP") with the face of a WebSocket, so that the RPC client
 * runs on it unchanged: the preface goes first, data records are messages, the server's heartbeats are answered, and
 * a close record gives `onclose` its code and reason (1006 when the connection ended without one).
 */
class TcpSocketLike implements SocketLike {
  binaryType = 'nodebuffer';
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  readonly #socket: Socket;
  readonly #reader = new TcpRecordReader(DEFAULT_MAX_FRAME_BYTES * 4);
  #connected = false;
  #closeSent = false;
  /** The close the connection ended with: the server's, or the one we sent. */
  #code: number = NO_CLOSE;
  #reason = '';
  #graceTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(url: string, token: string | undefined, ca: CertificateAuthority | undefined) {
    const u = new URL(url);
    const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
    const port = Number(u.port);
    if (host === '' || u.port === '') throw new TypeError(`${url}: a TCP URL is tcp://host:port or tls://host:port`);
    const preface = encodePreface(token);
    const secure = u.protocol === 'tls:';
    const socket = secure
      ? tlsConnect({
          host,
          port,
          ...(ca === undefined ? {} : { ca: nodeCa(ca) }),
          ...(isIP(host) === 0 ? { servername: host } : {}),
        })
      : netConnect({ host, port });
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.once(secure ? 'secureConnect' : 'connect', () => {
      this.#connected = true;
      if (this.#closeSent) return;
      socket.write(preface);
      this.onopen?.({});
    });
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', (e) => this.onerror?.(e));
    socket.once('close', () => {
      clearTimeout(this.#graceTimer);
      this.onclose?.({ code: this.#code, reason: this.#reason });
    });
  }

  send(data: Uint8Array): void {
    const s = this.#socket;
    if (this.#closeSent || s.destroyed) return;
    if (data.length < COPY_BELOW_BYTES) {
      const b = Buffer.allocUnsafe(TCP_HEADER_BYTES + data.length);
      b.writeUInt32BE(data.length, 0);
      b.set(data, TCP_HEADER_BYTES);
      s.write(b);
      return;
    }
    const h = Buffer.allocUnsafe(TCP_HEADER_BYTES);
    h.writeUInt32BE(data.length, 0);
    s.cork();
    s.write(h);
    s.write(data);
    s.uncork();
  }

  close(code: number = CLOSE_CODES.NORMAL, reason = ''): void {
    if (this.#closeSent) return;
    this.#closeSent = true;
    if (!this.#connected) {
      this.#socket.destroy();
      return;
    }
    if (this.#code === NO_CLOSE) {
      this.#code = code;
      this.#reason = reason;
    }
    this.#graceTimer = setTimeout(() => this.#socket.destroy(), CLOSE_GRACE_MS);
    this.#socket.end(encodeClose(code, reason));
  }

  #onData(chunk: Buffer): void {
    const reader = this.#reader;
    reader.push(chunk);
    try {
      for (let r = reader.next(); r !== null; r = reader.next()) {
        if (r.close) {
          if (!this.#closeSent) {
            this.#code = r.code;
            this.#reason = r.reason;
            this.close(r.code, '');
          }
          return;
        }
        if (r.bytes.length === 0) {
          if (!this.#closeSent) this.#socket.write(HEARTBEAT_RECORD);
        } else {
          // A Buffer, as `ws` hands a message over: values in replies are views of it.
          const b = r.bytes;
          this.onmessage?.({ data: Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength) });
        }
        if (this.#closeSent) return;
      }
    } catch (e) {
      if (!(e instanceof TcpProtocolError)) throw e;
      this.close(e.code, e.reason);
    }
  }
}

/** Opens a heapless connection over `tcp://host:port` or `tls://host:port` (trusting `ca` besides the system's). */
export function openTcpSocket(
  url: string,
  token: string | undefined,
  ca: CertificateAuthority | undefined,
): SocketLike {
  return new TcpSocketLike(url, token, ca);
}
