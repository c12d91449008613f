import { spawnSync } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { OffHeapMap } from '../map/offheap-map.js';
import { beginImageLoad, IMAGE_FILE } from './image.js';
import { loadNative, native, nativeStatus, portableImageChecksum, warnIfNotMapped } from './native.js';
import { nativeTarget } from './native-target.js';

const root = mkdtempSync(join(tmpdir(), 'offheap-native-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const script = fileURLToPath(new URL('../../scripts/build-native.mjs', import.meta.url));
const pkgDir = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');
const linux = process.platform === 'linux';
/** A test that compiles the helper: a C++ build takes tens of seconds on a loaded 2-core machine. */
const BUILD_TIMEOUT_MS = 240_000;

/** Runs the build script with `args` (and CXX=`cxx` if given); its exit code, stdout and stderr lines. */
function buildNative(args: string[], cxx?: string): { status: number | null; out: string[]; err: string[] } {
  const env = { ...process.env };
  if (cxx !== undefined) env.CXX = cxx;
  const r = spawnSync(process.execPath, [script, ...args], { env, encoding: 'utf8' });
  const lines = (s: string) => s.split('\n').filter((l) => l !== '');
  return { status: r.status, out: lines(r.stdout), err: lines(r.stderr) };
}

/** A closed map directory (so with its map image) of `n` entries. */
async function closedMap(n: number): Promise<string> {
  const dir = join(root, `map-${n}-${Math.random().toString(36).slice(2)}`);
  const map = await OffHeapMap.open<string, unknown>({ dir });
  for (let i = 0; i < n; i++) map.set(`k${i}`, { i, name: `n${i}`.repeat(i % 9) });
  await map.close();
  return dir;
}

describe('native helper', () => {
  it.runIf(linux && process.env.HEAPLESS_NATIVE !== '0')(
    'is prebuilt in the package for this platform, and maps images through Node-API wherever the runtime can',
    () => {
      // Node-API can wrap mapped memory in a SharedArrayBuffer where this Node's headers declare the call (22.23,
      // 24.22, 26); only elsewhere (Node 20) does the helper's V8 part, built for this ABI, do it.
      const nodeApi = readFileSync(join(dirname(process.execPath), '..', 'include', 'node', 'js_native_api.h'), 'utf8');
      const viaNodeApi = nodeApi.includes('node_api_create_external_sharedarraybuffer');
      expect(nativeStatus).toEqual({ imageLoader: 'mapped', mapper: viaNodeApi ? 'node-api' : 'v8', problem: null });
      expect(native?.loadSections).toBeTypeOf('function');
      expect(nativeTarget()).toMatch(/^linux-(x64|arm64)-glibc$/);
      expect(existsSync(join(pkgDir, 'prebuilds', nativeTarget(), 'heapless_offheap.node'))).toBe(true);
      // the package ships it, and installing runs nothing
      const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
      expect(pkg.files).toContain('prebuilds/*/heapless_offheap.node');
      expect(pkg.scripts).not.toHaveProperty('install');
      expect(pkg.scripts).not.toHaveProperty('postinstall');
    },
  );

  it('says in one line that a build failed, and the loader gives the same reason', () => {
    const out = join(root, 'failed');
    const r = buildNative(['--out', out], 'false');
    expect(r.status).toBe(0); // the build never fails for the optional helper
    expect(r.out).toEqual([]);
    expect(r.err).toHaveLength(1);
    const reason = linux ? 'false exited with 1' : `no native build on ${process.platform}`;
    expect(r.err[0]).toContain(`native helper NOT built for ${nativeTarget()}`);
    expect(r.err[0]).toContain(reason);
    expect(r.err[0]).toMatch(/map images load with plain reads$/);
    const { helpers, status } = loadNative(out, { env: {} });
    expect(helpers).toBeNull();
    expect(status.imageLoader).toBe('read');
    expect(status.problem).toContain(`the native helper for ${nativeTarget()} was not built: ${reason}`);
    // a missing compiler is the same single line
    const missing = buildNative(['--out', join(root, 'no-compiler')], join(root, 'no-such-c++'));
    expect(missing.err).toHaveLength(1);
    expect(missing.err[0]).toContain(linux ? 'ENOENT' : reason);
    // and so are pages of compiler errors: the first one is quoted, the rest kept in build.log
    const noisy = join(root, 'noisy-c++');
    writeFileSync(
      noisy,
      '#!/bin/sh\nfor i in 1 2 3 4 5; do echo "x.cc:$i:1: error: no matching call $i" >&2; done\nexit 1\n',
      {
        mode: 0o755,
      },
    );
    const errors = buildNative(['--out', join(root, 'noisy')], noisy);
    expect(errors.err).toHaveLength(1);
    if (linux) {
      expect(errors.err[0]).toContain('exited with 1 (x.cc:1:1: error: no matching call 1)');
      expect(readFileSync(join(root, 'noisy', 'prebuilds', nativeTarget(), 'build.log'), 'utf8')).toContain(
        'no matching call 5',
      );
    }
  });

  it('on a platform the package has no binary for, or with one that does not load, says why', () => {
    expect(loadNative(pkgDir, { env: {}, target: 'linux-riscv64-musl' })).toEqual({
      helpers: null,
      status: {
        imageLoader: 'read',
        mapper: null,
        problem: `this package has no native helper for linux-riscv64-musl (${join(pkgDir, 'prebuilds', 'linux-riscv64-musl', 'heapless_offheap.node')})`,
      },
    });
    const dir = join(root, 'other');
    mkdirSync(join(dir, 'prebuilds', 'linux-x64-glibc'), { recursive: true });
    writeFileSync(join(dir, 'prebuilds', 'linux-x64-glibc', 'heapless_offheap.node'), 'not a shared object');
    expect(loadNative(dir, { env: {}, target: 'linux-x64-glibc' }).status.problem).toMatch(
      /heapless_offheap\.node does not load/,
    );
    expect(loadNative(pkgDir, { env: { HEAPLESS_NATIVE: '0' } }).status).toEqual({
      imageLoader: 'read',
      mapper: null,
      problem: 'HEAPLESS_NATIVE=0 turns the native helper off',
    });
  });

  it('warns once per process, with what is slower and why, when images load with plain reads', () => {
    const emit = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const off = {
        imageLoader: 'read',
        mapper: null,
        problem: 'HEAPLESS_NATIVE=0 turns the native helper off',
      } as const;
      expect(warnIfNotMapped(off)).toBe(false); // a choice, not a problem
      expect(warnIfNotMapped({ ...nativeStatus, imageLoader: 'mapped', problem: null })).toBe(false);
      const missing = {
        imageLoader: 'read',
        mapper: null,
        problem: 'this package has no native helper for x',
      } as const;
      expect(warnIfNotMapped(missing)).toBe(true);
      expect(warnIfNotMapped(missing)).toBe(false);
      expect(emit.mock.calls).toEqual([
        [
          expect.stringMatching(
            /^map images load with plain reads, not mapped: .* twice as long .*: this package has no native helper for x$/,
          ),
          { code: 'HEAPLESS_WARN_OFFHEAP_NATIVE_UNAVAILABLE' },
        ],
      ]);
    } finally {
      emit.mockRestore();
    }
  });

  it.runIf(native !== null)('without its mapping part still checksums, and images load with plain reads', async () => {
    // The shipped binary in a package folder with no V8 part: where this Node's Node-API cannot map (Node 20) that
    // is a Node with no compiler at install; asking for the V8 part makes it so on every Node.
    const dir = join(root, 'no-mapper');
    const prebuilt = join(dir, 'prebuilds', nativeTarget());
    mkdirSync(prebuilt, { recursive: true });
    copyFileSync(
      join(pkgDir, 'prebuilds', nativeTarget(), 'heapless_offheap.node'),
      join(prebuilt, 'heapless_offheap.node'),
    );
    const { helpers, status } = loadNative(dir, { env: {}, mapper: 'v8' });
    expect(status).toEqual({
      imageLoader: 'read',
      mapper: null,
      problem: `Node ${process.version} cannot wrap mapped memory in a SharedArrayBuffer through Node-API (Node 22.23, 24.22 and 26 can), and its V8 part is not built for this ABI (${process.versions.modules}): run node ${join(dir, 'scripts', 'build-native.mjs')} under this Node, with a C++ compiler`,
    });
    expect(helpers?.loadSections).toBeNull();
    const bytes = Buffer.alloc(70_000, 9);
    expect(helpers!.checksum(bytes)).toBe(portableImageChecksum(bytes));
    const image = await closedMap(500);
    const read = beginImageLoad(image, helpers);
    if (typeof read === 'string') throw new Error(read);
    expect(read.loader).toBe('read');
    expect(read.finish()).toMatchObject({ entries: 500 });
  });

  it.runIf(native !== null && linux)(
    'keeps a shipped binary when it cannot build one, and builds only the V8 part a Node needs',
    () => {
      const out = join(root, 'shipped');
      const prebuilt = join(out, 'prebuilds', nativeTarget());
      mkdirSync(prebuilt, { recursive: true });
      const file = join(prebuilt, 'heapless_offheap.node');
      copyFileSync(join(pkgDir, 'prebuilds', nativeTarget(), 'heapless_offheap.node'), file);
      const shipped = readFileSync(file);
      const r = buildNative(['--out', out, '--mapper', 'v8'], 'false');
      expect(r.status).toBe(0);
      expect(r.err).toEqual([
        expect.stringMatching(
          new RegExp(
            `native helper built in .*heapless_offheap\\.node, but its V8 part for Node ${process.version.replaceAll('.', '\\.')} .*NOT built \\(false exited with 1; see .*\\); map images load with plain reads on this Node$`,
          ),
        ),
      ]);
      expect(readFileSync(file).equals(shipped)).toBe(true);
      expect(loadNative(out, { env: {} }).helpers).not.toBeNull();
    },
  );

  it.runIf(linux)(
    'maps through its V8 part the same bytes the plain loader reads, on this Node too; an unchanged build is kept',
    async () => {
      const out = join(root, 'v8');
      const first = buildNative(['--out', out, '--mapper', 'v8']);
      expect(first.err).toEqual([]);
      expect(first.out).toEqual([
        `@heapless/offheap: native helper built in ${relative(process.cwd(), join(out, 'prebuilds', nativeTarget(), 'heapless_offheap.node'))}, and its V8 part for Node ${process.version} (ABI ${process.versions.modules}) in ${relative(process.cwd(), join(out, 'dist', 'native', `abi${process.versions.modules}`, 'heapless_offheap_v8.node'))}; map images are mapped through V8 on this Node`,
      ]);
      const { helpers, status } = loadNative(out, { env: {}, mapper: 'v8' });
      expect(status).toEqual({ imageLoader: 'mapped', mapper: 'v8', problem: null });
      const dir = await closedMap(2000);
      const plain = beginImageLoad(dir, null);
      const mapped = beginImageLoad(dir, helpers);
      if (typeof plain === 'string' || typeof mapped === 'string') throw new Error('no image');
      expect([plain.loader, mapped.loader]).toEqual(['read', 'mapped']);
      const a = plain.finish();
      const b = mapped.finish();
      if (typeof a === 'string' || typeof b === 'string') throw new Error(`${a} ${b}`);
      expect(Buffer.from(b.table).equals(Buffer.from(a.table))).toBe(true);
      expect(b.segments.map((x) => Buffer.from(x))).toEqual(a.segments.map((x) => Buffer.from(x)));
      // a flipped bit in a section is found by the mapping loader's file checksum
      const path = join(dir, IMAGE_FILE);
      const bytes = readFileSync(path);
      bytes[bytes.length - 5]! ^= 1;
      writeFileSync(path, bytes);
      const damaged = beginImageLoad(dir, helpers);
      if (typeof damaged === 'string') throw new Error(damaged);
      expect(damaged.finish()).toMatch(/^image checksum mismatch in section \d+$/);
      // the same sources, compiler and Node: nothing rebuilt, nothing printed
      const v8File = join(out, 'dist', 'native', `abi${process.versions.modules}`, 'heapless_offheap_v8.node');
      const built = [
        statSync(v8File).mtimeMs,
        statSync(join(out, 'prebuilds', nativeTarget(), 'heapless_offheap.node')).mtimeMs,
      ];
      expect(buildNative(['--out', out, '--mapper', 'v8'])).toEqual({ status: 0, out: [], err: [] });
      expect([
        statSync(v8File).mtimeMs,
        statSync(join(out, 'prebuilds', nativeTarget(), 'heapless_offheap.node')).mtimeMs,
      ]).toEqual(built);
    },
    BUILD_TIMEOUT_MS,
  );

  it.runIf(native !== null)('rejects malformed arguments with a typed error, never a crash', () => {
    const h = native!;
    expect(() => h.checksum(new ArrayBuffer(4) as unknown as Uint8Array)).toThrow(TypeError);
    expect(() => h.checksum(new Uint16Array(4) as unknown as Uint8Array)).toThrow(TypeError);
    expect(() => h.checksumStart([new Uint8Array(4), 'x' as unknown as Uint8Array])).toThrow(TypeError);
    expect(() => h.checksumWait(12345)).toThrow(/no such checksum job/);
    const file = join(root, 'short.bin');
    writeFileSync(file, Buffer.alloc(10_000, 7));
    const fd = openSync(file, 'r');
    try {
      if (h.loadSections !== null) {
        for (const bad of [
          [0, -1, 5],
          [0, 10, 5],
          [0, 0, 0],
          [0.5, 1, 2],
          [0, Number.NaN, 4],
          [0, 1, 1e16],
        ]) {
          expect(() => h.loadSections!(fd, bad)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
        }
        expect(() => h.loadSections!(fd, [1, 100, 4096])).toThrow(expect.objectContaining({ code: 'EINVAL' })); // unaligned
        // a section past the end of the file: mapped, but its verification fails to read it
        const [job] = h.loadSections(fd, [0, 200_000, 200_000]);
        expect(() => h.checksumWait(job)).toThrow(expect.objectContaining({ code: 'EIO' }));
        expect(() => h.checksumWait(job)).toThrow(/no such checksum job/); // waited for once
      }
    } finally {
      closeSync(fd);
    }
  });

  it.runIf(native?.loadSections != null && native.populate !== null && linux)(
    'populates a mapped section: the same bytes, private to the process, and its writes no longer fault',
    () => {
      const pages = 2048;
      const n = pages * 4096 - 100; // the file part ends inside a page
      const file = join(root, 'populate.bin');
      const bytes = Buffer.alloc(n);
      for (let i = 0; i < n; i++) bytes[i] = (i * 31 + 7) & 0xff;
      writeFileSync(file, bytes);
      const fd = openSync(file, 'r');
      const views: Uint8Array[] = [];
      try {
        for (let k = 0; k < 2; k++) {
          const [job, sab] = native!.loadSections!(fd, [0, n, pages * 4096 + 8192]);
          expect(native!.checksumWait(job)).toEqual([portableImageChecksum(bytes)]);
          views.push(new Uint8Array(sab!, 0, n));
        }
      } finally {
        closeSync(fd);
      }
      const [populated, control] = views as [Uint8Array, Uint8Array];
      expect(native!.populate!([populated, new Uint8Array(0)])).toBe(true);
      expect(Buffer.from(populated).equals(bytes)).toBe(true);
      // A write to each page: the control (mapped, not populated) faults on each; the populated one does not. The
      // process's count also holds whatever else faulted meanwhile (the runtime's own threads), hence the margin.
      const faultsWriting = (view: Uint8Array) => {
        const before = process.resourceUsage().minorPageFault;
        for (let p = 0; p < n; p += 4096) view[p] ^= 0xff;
        return process.resourceUsage().minorPageFault - before;
      };
      const unpopulated = faultsWriting(control);
      expect(unpopulated).toBeGreaterThanOrEqual(pages);
      expect(faultsWriting(populated)).toBeLessThan(unpopulated / 4);
      expect(readFileSync(file).equals(bytes)).toBe(true); // private: the file is not written
      expect(populated[4096]).toBe(bytes[4096]! ^ 0xff);
      expect(() => native!.populate!(['no bytes' as unknown as Uint8Array])).toThrow(TypeError);
    },
  );

  it.runIf(native?.loadSections != null)(
    'shares mapped memory with worker threads, and a worker that exits with a job running ends cleanly',
    async () => {
      const n = 3 * 65536 + 17;
      const file = join(root, 'shared.bin');
      const bytes = Buffer.alloc(n);
      for (let i = 0; i < n; i++) bytes[i] = (i * 13) & 0xff;
      writeFileSync(file, bytes);
      const fd = openSync(file, 'r');
      const [job, sab] = native!.loadSections!(fd, [0, n, n + 4096]);
      expect(native!.checksumWait(job)).toEqual([portableImageChecksum(bytes)]);
      closeSync(fd);
      const nativeUrl = new URL('../../dist/persist/native.js', import.meta.url).href;
      expect(existsSync(fileURLToPath(nativeUrl))).toBe(true);
      const worker = new Worker(
        `const { parentPort, workerData } = require('node:worker_threads');
        import(workerData.nativeUrl).then(({ native }) => {
          const view = new Uint8Array(workerData.sab);
          parentPort.postMessage({ sum: native.checksum(view.subarray(0, workerData.n)), tail: view[workerData.n] });
          native.checksumStart([view]); // never waited for: the worker's environment ends it
        });`,
        { eval: true, workerData: { nativeUrl, sab, n } },
      );
      const message = new Promise((resolve) => worker.once('message', resolve));
      const exit = new Promise((resolve) => worker.once('exit', resolve));
      expect(await message).toEqual({ sum: portableImageChecksum(bytes), tail: 0 });
      expect(await exit).toBe(0);
      // the main thread's helper is unaffected
      expect(native!.checksum(new Uint8Array(sab!, 0, n))).toBe(portableImageChecksum(bytes));
    },
  );
});
