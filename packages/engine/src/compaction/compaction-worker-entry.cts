/**
 * The module piscina loads in each worker thread: CommonJS on purpose, so that loading it instantiates no ES module
 * synchronously. piscina loads a task module with require() first, and on Node 20 require() of an ES module
 * instantiates its graph synchronously (require(esm)); a worker terminated at that moment takes the whole process
 * down (`FATAL ERROR: v8::Module::IsGraphAsync`), which no catch can stop, and closing an engine terminates its
 * workers whenever it happens to be called. This entry starts loading the ES job module (compaction-worker.ts) with
 * import(), through the asynchronous loader, which a terminated thread simply abandons, and hands each job to it.
 */
import type { JobTask } from './compaction-job.js';
import type { JobOutcome } from './compaction-worker.js';

type Work = (task: JobTask) => JobOutcome;

// Started at load so that the module is ready by the first job; a failure to load rejects every job.
const loading: Promise<Work> = import('./compaction-worker.js').then((m) => m.default);
loading.catch(() => {});

export = async function work(task: JobTask): Promise<JobOutcome> {
  return (await loading)(task);
};
