/**
 * Other Nodes for CI and the packaging check: the `node` binary of the newest release in an npm range, from the npm
 * registry's `node-<platform>-<arch>` package (`npm pack`, checked against the registry's integrity), kept in a cache
 * folder; nothing else is downloaded.
 *
 * Environment: HEAPLESS_NODE_CACHE, the cache folder (default $XDG_CACHE_HOME/heapless/node, or ~/.cache/heapless/node).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

const cache =
  process.env.HEAPLESS_NODE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'heapless', 'node');
const binaryPackage = `node-${process.platform}-${process.arch}`;

function npm(args) {
  const r = spawnSync('npm', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`);
  return r.stdout;
}

function compareVersions(a, b) {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return 0;
}

/**
 * The path of the `node` binary of the newest release in `range` (an npm range such as "22"), fetched into the
 * cache unless already there. Throws if the registry has no such release or the binary is not the version asked.
 */
export function nodeFor(range) {
  const found = JSON.parse(npm(['view', `${binaryPackage}@${range}`, 'version', '--json']));
  const versions = (Array.isArray(found) ? found : [found]).filter((v) => /^\d+\.\d+\.\d+$/.test(v));
  if (versions.length === 0) throw new Error(`no release of ${binaryPackage} in ${range}`);
  const version = versions.sort(compareVersions).at(-1);
  const dir = join(cache, version);
  const bin = join(dir, 'bin', 'node');
  if (!existsSync(bin)) {
    mkdirSync(cache, { recursive: true });
    const tmp = mkdtempSync(join(cache, `.${version}-`));
    try {
      const [packed] = JSON.parse(npm(['pack', `${binaryPackage}@${version}`, '--json', '--pack-destination', tmp]));
      const tar = spawnSync('tar', ['-xzf', join(tmp, packed.filename), '-C', tmp, '--strip-components=1'], {
        stdio: 'inherit',
      });
      if (tar.status !== 0) throw new Error(`unpacking ${packed.filename} failed`);
      rmSync(join(tmp, packed.filename));
      renameSync(tmp, dir);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  const v = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  if (v.stdout?.trim() !== `v${version}`) throw new Error(`${bin} is not Node ${version}: ${v.stdout ?? v.error}`);
  return bin;
}
