import type { TestContext } from './test-context';
import { waitFor } from './test-context';

export interface RunBody {
  run_id: string;
  state: string;
  [key: string]: unknown;
}

export const auth = (key: string) => ({ Authorization: `Bearer ${key}` });

export async function createRun(ctx: TestContext, key: string, body: Record<string, unknown>): Promise<string> {
  const res = await ctx.api.post('/api/v1/agent/runs').set(auth(key)).send(body);
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body as { run_id: string }).run_id;
}

/**
 * A run as stored, to compare two reads: its session link is signed when read, with an expiry
 * counted from that second (two reads a second apart differ there), so only its path counts.
 */
export function storedRun(run: RunBody): RunBody {
  return { ...run, session_link: String(run.session_link).split('?')[0] };
}

export async function getRun(ctx: TestContext, key: string, runId: string): Promise<RunBody> {
  const res = await ctx.api.get(`/api/v1/agent/runs/${runId}`).set(auth(key));
  if (res.status !== 200) throw new Error(`get failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as RunBody;
}

/** Polls the run until it is in one of `states`; records every state it was seen in. */
export async function waitForState(
  ctx: TestContext,
  key: string,
  runId: string,
  states: string[],
  seen?: string[],
  timeoutMs?: number,
): Promise<RunBody> {
  return waitFor(
    async () => {
      const run = await getRun(ctx, key, runId);
      if (seen && seen[seen.length - 1] !== run.state) seen.push(run.state);
      return run;
    },
    (run) => {
      if (states.includes(run.state)) return true;
      // A run that ended some other way will not get there: fail now, with its status.
      const terminal = ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'];
      if (terminal.includes(run.state) && states.every((s) => terminal.includes(s))) {
        throw new Error(
          `run ${runId} ended ${run.state}, not ${states.join('/')}: ${JSON.stringify(run.status_message)}`,
        );
      }
      return false;
    },
    `run ${runId} to reach ${states.join('/')}`,
    timeoutMs,
  );
}

/** Transcript entries of a run, in order, straight from PostgreSQL. */
export async function transcript(
  ctx: TestContext,
  runId: string,
): Promise<{ kind: string; payload: Record<string, unknown> }[]> {
  return (await ctx.dataSource.query(`SELECT kind, payload FROM run_events WHERE run_id = $1 ORDER BY id`, [
    runId,
  ])) as {
    kind: string;
    payload: Record<string, unknown>;
  }[];
}
