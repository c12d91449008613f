// Slow and hostile peers against the `heapless serve` command itself (not `publish` in this process): an upgrade the
// server refuses neither ends the process when its peer resets it nor keeps its socket when its peer never closes.
import { afterAll, describe, expect, it } from 'vitest';
import { tcp, until, upgradeRequest } from './raw-socket.js';
import { type Child, startServe } from './serve-child.js';

const children: Child[] = [];
afterAll(() => {
  for (const c of children) c.proc.kill('SIGKILL');
});

async function serve(args: string[]): Promise<{ child: Child; port: number }> {
  const child = await startServe(['--memory', ...args]);
  children.push(child);
  return { child, port: Number(new URL(child.httpUrl).port) };
}

describe('heapless serve and upgrades it refuses', () => {
  it('lives on when peers reset their connection right after an upgrade it answers 404 or 400', async () => {
    const { child, port } = await serve([]);
    const refused = [
      upgradeRequest('127.0.0.1', port, '/nope'),
      upgradeRequest('127.0.0.1', port, '/v1/ws').replace('heapless.v1', 'other.v1'),
    ];
    for (let i = 0; i < 100; i++) {
      const s = await tcp(port);
      s.on('error', () => {});
      s.write(refused[i % 2]);
      s.resetAndDestroy(); // RST: the server's answer then fails with ECONNRESET
    }
    const health = await fetch(`${child.httpUrl}/healthz`);
    expect(health.status).toBe(200);
    expect(child.proc.exitCode).toBe(null);
  });

  it('lets go of the socket of a refused upgrade whose peer never closes its side', async () => {
    // Two places: both taken by peers that got their 404 and keep their side open; once the server let go of those
    // sockets a third connection is served, not closed by the cap as it arrives.
    const { child, port } = await serve(['--max-connections', '2']);
    const held = await Promise.all(
      [1, 2].map(async () => {
        const s = await tcp(port);
        s.allowHalfOpen = true;
        s.on('error', () => {});
        s.write(upgradeRequest('127.0.0.1', port, '/nope'));
        return s;
      }),
    );
    try {
      await until(
        () =>
          fetch(`${child.httpUrl}/healthz`, { signal: AbortSignal.timeout(1000) }).then(
            (r) => r.status === 200,
            () => false,
          ),
        'a place is free again',
        5_000,
        100,
      );
    } finally {
      for (const s of held) s.destroy();
    }
  });
});
