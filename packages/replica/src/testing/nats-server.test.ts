// The nats-server harness itself: servers start with JetStream on loopback, a cluster forms with a meta leader,
// nodes stop, die and come back, and close() leaves no process and no directory.
import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type NatsNode, startNatsCluster, startNatsServer } from './nats-server.js';

/** The INFO object a NATS server sends first on every client connection. */
function serverInfo(node: NatsNode): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: node.port });
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString('utf8');
      const end = text.indexOf('\r\n');
      if (end < 0) return;
      socket.destroy();
      const line = text.slice(0, end);
      if (!line.startsWith('INFO ')) reject(new Error(`not an INFO line: ${line}`));
      else resolve(JSON.parse(line.slice(5)) as Record<string, unknown>);
    });
    socket.once('error', reject);
  });
}

/** The JetStream meta group as node `node` sees it (monitoring `/jsz`). */
async function metaCluster(node: NatsNode): Promise<{ leader?: string; cluster_size?: number }> {
  const response = await fetch(`http://127.0.0.1:${node.monitorPort}/jsz`);
  const body = (await response.json()) as { meta_cluster?: { leader?: string; cluster_size?: number } };
  return body.meta_cluster ?? {};
}

/** Whether a process with this id exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('testing/nats-server.ts', () => {
  it('starts one JetStream server on loopback with its own config and store, and close() removes all', async () => {
    await using nats = await startNatsServer(); // closed again at the end, as close() is idempotent
    const [node] = nats.nodes;
    expect(nats.urls).toEqual([`nats://127.0.0.1:${node!.port}`]);
    const info = await serverInfo(node!);
    expect(info.jetstream).toBe(true);
    expect(info.server_name).toBe('n1');
    const config = readFileSync(join(node!.dir, 'nats.conf'), 'utf8');
    expect(config).toContain(`listen: "127.0.0.1:${node!.port}"`);
    expect(existsSync(join(node!.dir, 'store', 'jetstream'))).toBe(true);
    const pid = node!.pid!;
    expect(alive(pid)).toBe(true);

    await nats.close();
    expect(alive(pid)).toBe(false);
    expect(node!.running).toBe(false);
    expect(existsSync(nats.dir)).toBe(false);
    await nats.close(); // idempotent
  });

  it('stops, kills and restarts a single server on the same port and store', async () => {
    await using nats = await startNatsServer();
    const node = nats.nodes[0]!;
    const first = node.pid!;
    await node.kill();
    expect(node.running).toBe(false);
    expect(alive(first)).toBe(false);
    await node.start();
    expect(node.pid).not.toBe(first);
    expect((await serverInfo(node)).jetstream).toBe(true);
    const second = node.pid!;
    await node.restart();
    expect(alive(second)).toBe(false);
    expect((await serverInfo(node)).server_name).toBe('n1');
  });

  it('forms a 3-node JetStream cluster on loopback that survives one node killed and restarted', async () => {
    await using nats = await startNatsCluster(3);
    expect(nats.nodes.map((n) => n.name)).toEqual(['n1', 'n2', 'n3']);
    for (const node of nats.nodes) {
      const info = await serverInfo(node);
      expect(info.jetstream).toBe(true);
      expect(info.cluster).toBe('heapless-test');
      const meta = await metaCluster(node);
      expect(meta.cluster_size).toBe(3);
      expect(meta.leader).toMatch(/^n[123]$/);
    }
    const victim = nats.nodes[1]!;
    const pid = victim.pid!;
    await victim.kill();
    expect(alive(pid)).toBe(false);
    // The other two still hold a majority; the restarted node is healthy only once it is back in the meta group.
    await victim.start();
    expect((await metaCluster(victim)).leader).toMatch(/^n[123]$/);

    const pids = nats.nodes.map((n) => n.pid!);
    await nats.close();
    for (const p of pids) expect(alive(p)).toBe(false);
    expect(existsSync(nats.dir)).toBe(false);
  });

  it('rejects a cluster of fewer than two nodes', () => {
    expect(() => startNatsCluster(1)).toThrow(RangeError);
  });
});
