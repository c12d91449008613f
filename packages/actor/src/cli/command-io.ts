/** Where a subcommand of `heapless engine` writes: its result (stdout) and its progress and warnings (stderr). */
export interface CommandIo {
  out(text: string): void;
  err(text: string): void;
}
