/**
 * The log of a following server's replica side: pino-shaped JSON lines on stdout until the server's logger exists
 * (the follower starts before the server listens), then that logger.
 */
import type { FollowerLog } from '@heapless/replica';
import type { FastifyBaseLogger } from 'fastify';

/** pino's numbers for the levels a follower logs at. */
const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: 99 };

/** A {@link FollowerLog} that writes JSON lines at `level` and up until {@link attach} gives it the server's logger. */
export class EarlyLog implements FollowerLog {
  #target: FastifyBaseLogger | undefined;
  readonly #min: number;

  constructor(level: string) {
    this.#min = LEVELS[level] ?? LEVELS.info!;
  }

  /** Logs through `target` from now on. */
  attach(target: FastifyBaseLogger): void {
    this.#target = target;
  }

  info(details: object, message: string): void {
    if (this.#target !== undefined) this.#target.info(details, message);
    else this.#write(30, details, message);
  }

  warn(details: object, message: string): void {
    if (this.#target !== undefined) this.#target.warn(details, message);
    else this.#write(40, details, message);
  }

  #write(level: number, details: object, msg: string): void {
    if (level < this.#min) return;
    process.stdout.write(`${JSON.stringify({ level, time: Date.now(), pid: process.pid, ...details, msg })}\n`);
  }
}
