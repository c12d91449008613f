/**
 * The phases of `gc-pressure`, in order, all on one store:
 *
 * - `load`: N `set`s of new users (`user:<i>` → `{ id, name, email, age, friends[3] }`); ops/s, the longest single
 *   `set` as the caller saw it (index growth must never stall a caller for long), and the GC pauses seen
 *   while loading (count, total, longest). Then two forced collections settle the heap, and the memory of the
 *   process is read (heap used, external, array buffers, RSS), and one more forced full GC is timed.
 * - `get`: N gets of random users, decoded to objects (a field is read so nothing is optimized away).
 * - `get-field`: N reads of one field (`age`) of random users — through a flyweight view without decoding where
 *   the system has one (offheap-struct), otherwise get-then-read.
 * - `scan`: one pass over every user counting those of at least 50 (records/s), on this thread; for OffHeapMap also
 *   `scan (parallel)`: the same count by the map's parallel `scan` on its worker pool (one thread per core). Each is
 *   run once to warm up (the pool starts, the code is compiled), then timed three times; the median is reported.
 * - `update`: N `set`s of random existing users with a changed age; ops/s and GC pauses.
 *
 * `load` always runs (the others need the data); it is reported only when selected.
 */
export const GC_PHASES = ['load', 'get', 'get-field', 'scan', 'update'] as const;
