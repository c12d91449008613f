// Raw TCP peers for the hostile-client tests: a WebSocket client written by hand (so that it can stop reading, or
// send its handshake one byte at a time), with frames masked as RFC 6455 requires of a client.
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';

/** The upgrade request of a WebSocket client to `path`, with `headers` added. */
export function upgradeRequest(host: string, port: number, path: string, headers: Record<string, string> = {}): string {
  const lines = [
    `GET ${path} HTTP/1.1`,
    `Host: ${host}:${port}`,
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
    'Sec-WebSocket-Version: 13',
    'Sec-WebSocket-Protocol: heapless.v1',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** A binary frame from a client: FIN, opcode 2, masked with the key 0 (which leaves the payload as it is). */
export function clientFrame(payload: Uint8Array): Buffer {
  const n = payload.length;
  const head = n < 126 ? Buffer.alloc(2) : n < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
  head[0] = 0x82;
  if (n < 126) head[1] = 0x80 | n;
  else if (n < 65536) {
    head[1] = 0x80 | 126;
    head.writeUInt16BE(n, 2);
  } else {
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(BigInt(n), 2);
  }
  return Buffer.concat([head, Buffer.alloc(4), payload]);
}

/** A TCP connection to 127.0.0.1:`port`, resolved once connected. */
export function tcp(port: number, host = '127.0.0.1'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Resolves when `socket` has been closed by the other side (or destroyed), with the bytes it received. */
export function closedBy(socket: Socket): Promise<Buffer> {
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.on('error', () => {});
  return new Promise((resolve) => socket.once('close', () => resolve(Buffer.concat(chunks))));
}

/** Resolves with what `socket` received once the server closed it; fails if it is still open after `ms`. */
export async function closedWithin(socket: Socket, ms: number): Promise<Buffer> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still open after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([closedBy(socket), deadline]);
  } finally {
    clearTimeout(timer);
    socket.destroy();
  }
}

/** Polls `check` every `everyMs` until it is true; rejects after `maxMs` (a wait, not a speed assertion). */
export async function until(check: () => boolean | Promise<boolean>, what: string, maxMs = 30_000, everyMs = 50) {
  const end = Date.now() + maxMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
