// @heapless/replica loads and downloads where the runtime has no WebAssembly (`node --jitless`): its O_DIRECT
// buffers come from WebAssembly.Memory, and without it the map image is written through the page cache instead.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('@heapless/replica without WebAssembly', () => {
  it('imports under node --jitless', () => {
    const script =
      "const m = await import('@heapless/replica'); console.log(typeof m.CheckpointStore, typeof WebAssembly);";
    const run = spawnSync(process.execPath, ['--jitless', '--input-type=module', '-e', script], {
      cwd: new URL('.', import.meta.url).pathname,
      encoding: 'utf8',
    });
    expect(run.stderr).not.toMatch(/Error/);
    expect(run.stdout.trim()).toBe('function undefined');
  });
});
