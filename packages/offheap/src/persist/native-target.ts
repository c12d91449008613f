import { readFileSync } from 'node:fs';

/**
 * The prebuilt native helper's target for this process: `<platform>-<arch>`, and on Linux `-glibc` or `-musl` (the
 * C library the running process itself links, read from its memory map, since a binary for one does not load with
 * the other). The folder under `prebuilds/` that scripts/build-native.mjs builds into and src/persist/native.ts
 * loads from. Never throws.
 */
export function nativeTarget(): string {
  const base = `${process.platform}-${process.arch}`;
  if (process.platform !== 'linux') return base;
  let maps = '';
  try {
    maps = readFileSync('/proc/self/maps', 'utf8');
  } catch {
    // no procfs: glibc, by far the likelier
  }
  return `${base}-${/\/ld-musl-|\/libc\.musl-/.test(maps) ? 'musl' : 'glibc'}`;
}
