/**
 * A registry on a loopback port that serves packed tarballs as if they were published, for the packaging check:
 * `npm install -g heapless` and `npx heapless serve` resolve our packages by name, as they will once published,
 * and every other package from the real registry (its metadata passes through this server; its tarballs are
 * fetched from where that metadata points, the real registry). Nothing is written outside the tarball folder.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';

/** The `package.json` inside a packed tarball. */
function manifestOf(file) {
  const r = spawnSync('tar', ['-xzOf', file, 'package/package.json'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${file}: no package/package.json (${r.stderr})`);
  return JSON.parse(r.stdout);
}

/**
 * Starts the registry for every `*.tgz` in `dir`, in front of `upstream` (a registry URL ending in `/`). Resolves to
 * `{ url, close }`; `url` ends in `/`, as npm's `registry` setting is written.
 */
export async function startLocalRegistry(dir, upstream) {
  const packages = new Map();
  const server = createServer((req, res) => {
    void answer(req, res).catch((err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(err));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/`;

  for (const file of readdirSync(dir).filter((f) => f.endsWith('.tgz'))) {
    const bytes = readFileSync(join(dir, file));
    const manifest = manifestOf(join(dir, file));
    packages.set(manifest.name, {
      file,
      bytes,
      packument: {
        name: manifest.name,
        'dist-tags': { latest: manifest.version },
        versions: {
          [manifest.version]: {
            ...manifest,
            _id: `${manifest.name}@${manifest.version}`,
            dist: {
              tarball: `${url}-/${file}`,
              integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
              shasum: createHash('sha1').update(bytes).digest('hex'),
            },
          },
        },
      },
    });
  }

  async function answer(req, res) {
    const path = decodeURIComponent(new URL(req.url, url).pathname.slice(1));
    if (path.startsWith('-/')) {
      const found = [...packages.values()].find((p) => p.file === path.slice(2));
      if (found === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': found.bytes.length });
      return void res.end(found.bytes);
    }
    const ours = packages.get(path);
    if (ours !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify(ours.packument));
    }
    if (req.method !== 'GET') return void res.writeHead(405).end();
    const accept = req.headers.accept;
    const r = await fetch(new URL(req.url.slice(1), upstream), { headers: accept ? { accept } : {} });
    const body = Buffer.from(await r.arrayBuffer());
    res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
    res.end(body);
  }

  return {
    url,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
