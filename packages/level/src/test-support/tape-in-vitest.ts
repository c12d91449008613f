/**
 * Runs a tape-based suite (abstract-level's shared suite is one) inside vitest, with every assertion counted.
 *
 * `collectTape(define)` hands `define` a tape-compatible `test` function of a private tape harness and records
 * each top-level test it registers, in order, with every assertion tape reports for it (subtests included). The
 * caller turns each record into one vitest test that waits for the tape test to end and fails if any of its
 * assertions failed (tape reports a missed plan, a thrown error, an assertion after the end and a timeout as
 * failed assertions too), then `start()`s the harness, which runs the tape tests one after another, as tape does.
 * `finished` settles when the whole harness is done, after which `failures()` also holds late assertions that
 * arrived after their test's vitest test had passed.
 */
import { inspect } from 'node:util';
import tape from 'tape';

/** One assertion as tape reports it. */
export interface TapeAssertion {
  readonly ok: boolean;
  readonly name: string;
  readonly operator: string;
  readonly actual?: unknown;
  readonly expected?: unknown;
  readonly error?: unknown;
  readonly todo?: boolean | string;
}

/** One top-level tape test and what tape reported for it. */
export interface TapeTestRecord {
  /** The test's name, with ` #n` appended to the n-th repeat of a name (a suite run again on a sublevel). */
  readonly name: string;
  readonly assertions: TapeAssertion[];
  /** Settles when tape ends the test. */
  readonly ended: Promise<void>;
}

export interface TapeRun {
  readonly tests: readonly TapeTestRecord[];
  /** Starts the harness (idempotent). */
  start(): void;
  /** Settles when every test has run. */
  readonly finished: Promise<void>;
}

type TapeTest = ReturnType<typeof tape.createHarness> extends (...args: never[]) => infer T ? T : never;

/** A failed assertion that tape does not allow to fail (a `todo` may fail). */
export function isFailure(a: TapeAssertion): boolean {
  return !a.ok && !a.todo;
}

/** A failed assertion as a readable paragraph: what was asserted, what came, and the error's stack if any. */
export function describeFailure(a: TapeAssertion): string {
  const lines = [`not ok: ${a.name} (${a.operator})`];
  if ('expected' in a) lines.push(`  expected: ${inspect(a.expected, { depth: 4 })}`);
  if ('actual' in a) lines.push(`  actual:   ${inspect(a.actual, { depth: 4 })}`);
  if (a.error instanceof Error) lines.push(`  error: ${a.error.stack ?? a.error.message}`);
  return lines.join('\n');
}

/**
 * Registers the suite that `define` declares on a fresh tape harness, each test with a tape timeout of
 * `timeoutMs` (a test that never ends then fails instead of holding up the rest).
 */
export function collectTape(define: (test: ReturnType<typeof tape.createHarness>) => void, timeoutMs: number): TapeRun {
  const harness = tape.createHarness();
  const tests: TapeTestRecord[] = [];
  const seen = new Map<string, number>();
  const finished = new Promise<void>((resolve) => harness.onFinish(() => resolve()));

  const watch = (t: TapeTest, assertions: TapeAssertion[]): void => {
    t.on('result', (r: TapeAssertion | string) => {
      if (typeof r !== 'string') assertions.push(r);
    });
    t.on('test', (sub: TapeTest) => watch(sub, assertions));
  };

  const test = ((name: string, ...rest: unknown[]) => {
    const fn = rest.pop() as tape.TestCase;
    const opts = { timeout: timeoutMs, ...(rest[0] as tape.TestOptions | undefined) };
    const t = harness(name, opts, fn) as unknown as TapeTest;
    const n = (seen.get(name) ?? 0) + 1;
    seen.set(name, n);
    const assertions: TapeAssertion[] = [];
    watch(t, assertions);
    const ended = new Promise<void>((resolve) => t.once('end', () => resolve()));
    tests.push({ name: n === 1 ? name : `${name} #${n}`, assertions, ended });
    return t;
  }) as unknown as ReturnType<typeof tape.createHarness>;

  define(test);

  let started = false;
  return {
    tests,
    finished,
    start() {
      if (started) return;
      started = true;
      // Tape runs its tests once a stream reads its results; this one is drained and dropped.
      harness.createStream({ objectMode: true }).on('data', () => {});
    },
  };
}
