/**
 * The receiving side of the `codec` benchmark's loopback phases, on a worker thread: listens on a free loopback
 * port (posted to the parent), decodes every message with the same codec as the sender, checks each decoded record
 * has its fields, and posts `{ decoded, ok }` once `count` messages have arrived; then closes the connection.
 */
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { WebSocketServer } from 'ws';
import { codecOf, priceUpdates } from './price-update.js';

const { system, transport, count } = workerData as { system: string; transport: 'websocket' | 'tcp'; count: number };
const codec = codecOf(system, priceUpdates(1)[0]!)!;
let decoded = 0;
let ok = 0;

function take(bytes: Uint8Array): boolean {
  const v = codec.decode(bytes) as { bid?: unknown; sequence?: unknown };
  decoded++;
  if (typeof v.bid === 'number' && typeof v.sequence === 'number') ok++;
  return decoded === count;
}

function finish(close: () => void): void {
  parentPort!.postMessage({ decoded, ok });
  close();
}

if (transport === 'websocket') {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  wss.on('listening', () => parentPort!.postMessage((wss.address() as AddressInfo).port));
  wss.on('connection', (ws) => {
    ws.on('message', (data: Buffer) => {
      if (take(data)) finish(() => ws.close());
    });
  });
} else {
  const server = createServer((socket: Socket) => {
    let pending: Buffer = Buffer.alloc(0);
    socket.on('data', (data: Buffer) => {
      let buf = pending.length === 0 ? data : Buffer.concat([pending, data]);
      let at = 0;
      while (buf.length - at >= 4) {
        const length = buf.readUInt32LE(at);
        if (buf.length - at - 4 < length) break;
        if (take(buf.subarray(at + 4, at + 4 + length))) {
          finish(() => socket.end());
          return;
        }
        at += 4 + length;
      }
      buf = buf.subarray(at);
      pending = buf.length === 0 ? Buffer.alloc(0) : Buffer.from(buf);
    });
  });
  server.listen(0, '127.0.0.1', () => parentPort!.postMessage((server.address() as AddressInfo).port));
}
