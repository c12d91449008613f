/**
 * Progress of long runs, on stderr so that stdout stays the table: a cli-progress bar when stderr is a terminal,
 * otherwise lines of counts and percent: when a phase starts, every few seconds, and when it ends (CI logs, pipes).
 */
import cliProgress from 'cli-progress';

/** Where a run is, as shown to a person. */
export interface ProgressDisplay {
  /** Shows that `label` has reached `done` of `total`. */
  update(label: string, done: number, total: number): void;
  /** Prints a line that stays (a finished run, a note) above the bar. */
  log(line: string): void;
  /** Removes the bar; nothing is drawn afterwards. */
  stop(): void;
}

/** Picks the bar for a terminal and plain lines for anything else. */
export function createProgressDisplay(stream: NodeJS.WriteStream = process.stderr): ProgressDisplay {
  return stream.isTTY ? new BarDisplay(stream) : new LineDisplay(stream);
}

class BarDisplay implements ProgressDisplay {
  private readonly bar: cliProgress.SingleBar;
  private label = '';
  private started = false;

  constructor(private readonly stream: NodeJS.WriteStream) {
    this.bar = new cliProgress.SingleBar(
      {
        stream,
        format: '{label} |{bar}| {percentage}% {value}/{total} eta {eta_formatted}',
        hideCursor: true,
        clearOnComplete: true,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
  }

  update(label: string, done: number, total: number): void {
    if (!this.started || label !== this.label) {
      if (this.started) this.bar.stop();
      this.bar.start(total, done, { label });
      this.label = label;
      this.started = true;
    } else {
      this.bar.update(done);
    }
  }

  log(line: string): void {
    if (this.started) {
      this.bar.stop();
      this.started = false;
    }
    this.stream.write(`${line}\n`);
  }

  stop(): void {
    if (this.started) this.bar.stop();
    this.started = false;
  }
}

/** Without a terminal, a line at most this often while a phase runs: a person reading a log sees it advance. */
export const LINE_INTERVAL_MS = 5_000;

/**
 * Without a terminal (CI logs, pipes): a line when a phase starts, then the count reached at most once per
 * {@link LINE_INTERVAL_MS}, and a line when the phase reaches its total, so that a phase shorter than the interval
 * still shows that it ended rather than only its start.
 */
export class LineDisplay implements ProgressDisplay {
  private label = '';
  private lastLine = 0;
  private finished = false;

  constructor(
    private readonly stream: Pick<NodeJS.WritableStream, 'write'>,
    private readonly now: () => number = Date.now,
  ) {}

  update(label: string, done: number, total: number): void {
    const now = this.now();
    const ends = done >= total;
    // The same phase again once it ended is a new pass over it (the next run's): shown from its start.
    const quiet = this.finished ? ends : !ends && now - this.lastLine < LINE_INTERVAL_MS;
    if (label === this.label && quiet) return;
    this.label = label;
    this.lastLine = now;
    this.finished = ends;
    const percent = total > 0 ? Math.floor((100 * done) / total) : 100;
    this.stream.write(`${label}: ${done}/${total} (${percent}%)\n`);
  }

  log(line: string): void {
    this.stream.write(`${line}\n`);
  }

  stop(): void {}
}
