/** What a parent sends its isolated child: one job at a time. */
export interface JobRequest {
  id: number;
  job: string;
  input: unknown;
}

/** What the child answers: that it has loaded its modules, or a job's output or error. */
export type JobReply =
  { ready: true } | { id: number; ok: true; output: unknown } | { id: number; ok: false; message: string };

/** A job: plain data in, plain data out (what JSON carries; functions and classes do not cross). */
export type Job = (input: never) => unknown;

/**
 * The child's side of createIsolatedChild: answers each job the parent sends, and exits when
 * the parent does. A job that throws is answered with its message (a bug: input nobody vouched
 * for is answered with data, never an exception).
 */
export function serveJobs(jobs: Record<string, Job>): void {
  const send = (reply: JobReply) => process.send!(reply);
  process.on('message', (request: JobRequest) => {
    void (async () => {
      try {
        if (!Object.hasOwn(jobs, request.job)) throw new Error(`no job ${request.job}`);
        const output = await jobs[request.job]!(request.input as never);
        send({ id: request.id, ok: true, output });
      } catch (err) {
        send({ id: request.id, ok: false, message: err instanceof Error ? err.message : String(err) });
      }
    })();
  });
  process.on('disconnect', () => process.exit(0));
  send({ ready: true });
}
