import { defineConfig } from 'vitest/config';

// One configuration for every package's unit tests (beside their code in src/), a package's suites that use it
// through its public entry (its test/: kill -9 children, data-driven files), and the cross-package tests in test/.
// Packages import each other by name, which resolves to their built dist/ (the test script builds first).
export default defineConfig({
  test: {
    include: [
      'packages/*/src/**/*.test.ts',
      'packages/*/test/**/*.test.ts',
      'test/**/*.test.ts',
      'bench/src/**/*.test.ts',
    ],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // vitest's default in run mode is one worker fewer than the cores: one worker on a 2-core CI machine, where most
    // of the long suites wait on child processes (servers, kill -9 children, nats-server) rather than compute.
    maxWorkers: 2,
  },
});
