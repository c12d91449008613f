/**
 * Other runtimes for CI and the packaging check, from the npm registry only: the `node` binary of the newest release
 * in an npm range from the `node-<platform>-<arch>` package, and Bun's from `@oven/bun-<platform>-<arch>` (the
 * package the npm `bun` package installs its binary from, taken directly so that no install script runs). Each is
 * fetched with `npm pack` (checked against the registry's integrity) and kept in a cache folder; nothing else is
 * downloaded.
 *
 * Environment: HEAPLESS_NODE_CACHE, the cache folder (default $XDG_CACHE_HOME/heapless/node, or ~/.cache/heapless/node).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

const cache =
  process.env.HEAPLESS_NODE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'heapless', 'node');

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
 * The path of `bin` inside the newest release of npm package `name` in `range` (releases only, no pre-releases),
 * unpacked into `<cache>/<folder>` unless already there; throws unless `<bin> --version` prints that version.
 */
function binaryFor(name, range, folder, bin) {
  const found = JSON.parse(npm(['view', `${name}@${range}`, 'version', '--json']));
  const versions = (Array.isArray(found) ? found : [found]).filter((v) => /^\d+\.\d+\.\d+$/.test(v));
  if (versions.length === 0) throw new Error(`no release of ${name} in ${range}`);
  const version = versions.sort(compareVersions).at(-1);
  const dir = join(cache, folder(version));
  const path = join(dir, bin);
  if (!existsSync(path)) {
    mkdirSync(cache, { recursive: true });
    const tmp = mkdtempSync(join(cache, `.${folder(version)}-`));
    try {
      const [packed] = JSON.parse(npm(['pack', `${name}@${version}`, '--json', '--pack-destination', tmp]));
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
  const v = spawnSync(path, ['--version'], { encoding: 'utf8' });
  if (v.stdout?.trim().replace(/^v/, '') !== version) {
    throw new Error(`${path} is not ${name} ${version}: ${v.stdout ?? v.error}`);
  }
  return path;
}

/**
 * The path of the `node` binary of the newest release in `range` (an npm range such as "22"), fetched into the
 * cache unless already there. Throws if the registry has no such release or the binary is not the version asked.
 */
export function nodeFor(range) {
  return binaryFor(`node-${process.platform}-${process.arch}`, range, (v) => v, join('bin', 'node'));
}

/**
 * The path of the `bun` binary of the newest Bun in `range` (such as "1.4") for this platform (glibc builds on
 * Linux), fetched into the cache unless already there. Throws as {@link nodeFor} does.
 */
export function bunFor(range) {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const arch = process.arch === 'arm64' ? 'aarch64' : process.arch;
  return binaryFor(`@oven/bun-${platform}-${arch}`, range, (v) => `bun-${v}`, join('bin', 'bun'));
}
