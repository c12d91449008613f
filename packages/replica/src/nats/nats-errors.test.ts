import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ReplicaError } from '../errors.js';
import { replicaErrorOf } from './nats-errors.js';

/** An error as Node's fs and net raise them. */
const systemError = (code: string, syscall: string) =>
  Object.assign(new Error(`${code}: ${syscall}`), { code, syscall });

describe('replicaErrorOf', () => {
  it('a local file that cannot be written or read is LOCAL_IO; a socket that fails is UNAVAILABLE', async () => {
    expect(replicaErrorOf(systemError('ENOSPC', 'write'), 'x').code).toBe('HEAPLESS_ERR_REPLICA_LOCAL_IO');
    expect(replicaErrorOf(systemError('EIO', 'read'), 'x').code).toBe('HEAPLESS_ERR_REPLICA_LOCAL_IO');
    expect(replicaErrorOf(systemError('EACCES', 'open'), 'x').code).toBe('HEAPLESS_ERR_REPLICA_LOCAL_IO');
    expect(replicaErrorOf(systemError('EROFS', 'mkdir'), 'x').code).toBe('HEAPLESS_ERR_REPLICA_LOCAL_IO');
    expect(replicaErrorOf(systemError('ECONNRESET', 'read'), 'x').code).toBe('HEAPLESS_ERR_REPLICA_UNAVAILABLE');
    expect(replicaErrorOf(systemError('ECONNREFUSED', 'connect'), 'x').code).toBe('HEAPLESS_ERR_REPLICA_UNAVAILABLE');
    expect(replicaErrorOf(systemError('EPIPE', 'write'), 'x').code).toBe('HEAPLESS_ERR_REPLICA_NATS_ERROR');
    expect(replicaErrorOf(new Error('something else'), 'x').code).toBe('HEAPLESS_ERR_REPLICA_NATS_ERROR');
    // The errors fs really raises: a write to a file opened for reading, an open in a missing folder.
    const dir = await mkdtemp(join(tmpdir(), 'nats-errors-'));
    try {
      await writeFile(join(dir, 'f'), 'x');
      const handle = await open(join(dir, 'f'), 'r');
      const bad = await handle.write(Buffer.from('y')).catch((e: unknown) => e);
      await handle.close();
      expect(replicaErrorOf(bad, 'writing').code).toBe('HEAPLESS_ERR_REPLICA_LOCAL_IO');
      const missing = await open(join(dir, 'no', 'f'), 'wx').catch((e: unknown) => e);
      const mapped = replicaErrorOf(missing, 'opening');
      expect(mapped).toBeInstanceOf(ReplicaError);
      expect(mapped).toMatchObject({ code: 'HEAPLESS_ERR_REPLICA_LOCAL_IO', cause: missing });
      expect(mapped.message).toMatch(/^opening: ENOENT/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
