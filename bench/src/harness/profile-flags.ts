/**
 * `HEAPLESS_BENCH_PROFILE=DIR` runs the processes a benchmark times on their own — each `heapless serve` child and
 * each startup probe — under `node --cpu-prof`, their profiles written to DIR as they exit: the way to see where a
 * measured process's time goes under the benchmark's load (NODE_OPTIONS refuses `--cpu-prof`, and these children
 * do not inherit the harness's flags).
 */
export function profileFlags(): string[] {
  const dir = process.env.HEAPLESS_BENCH_PROFILE;
  return dir === undefined || dir === '' ? [] : ['--cpu-prof', '--cpu-prof-dir', dir];
}
