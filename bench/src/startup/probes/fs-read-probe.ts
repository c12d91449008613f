/**
 * (d) the physical floor: every byte of the engine's files read with plain `fs` reads into one reused 1 MiB buffer —
 * no parsing, no allocation per file. The map image (`MAPIMAGE`, about as large as the tables) is left out: the
 * floor is the engine's data, as the issue defines it, which any start must read at least once.
 * Nothing is dropped from the page cache first: the run has just written the directory, so it is warm, as it is
 * for every other system of the run.
 */
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { Sample } from '../../harness/benchmark.js';
import { START_CASE } from '../probe-messages.js';
import { memorySamples, timeSample } from './memory-samples.js';

const CHUNK = 1 << 20;

export async function probeFsRead(dir: string): Promise<Sample[]> {
  const buffer = Buffer.allocUnsafeSlow(CHUNK);
  const started = performance.now();
  let bytes = 0;
  for (const file of filesUnder(dir)) {
    const fd = openSync(file, 'r');
    try {
      for (let n = readSync(fd, buffer, 0, CHUNK, null); n > 0; n = readSync(fd, buffer, 0, CHUNK, null)) bytes += n;
    } finally {
      closeSync(fd);
    }
  }
  const ms = performance.now() - started;
  return [
    timeSample(START_CASE, ms),
    { case: 'engine directory', metric: 'bytes read', value: bytes, unit: 'B', better: 'lower' },
    ...memorySamples(),
  ];
}

/** Every regular file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...filesUnder(path));
    else if (entry.isFile() && !entry.name.startsWith('MAPIMAGE')) files.push(path);
  }
  return files;
}
