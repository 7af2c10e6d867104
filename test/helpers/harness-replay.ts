import { existsSync, writeFileSync } from 'node:fs';
import { createInvocationOutput, releaseInvocationOutput } from '../../activities/harness/invocation-output';
import { invocationRecording } from '../../activities/harness/invocation-recording';
import type { CliHarnessType } from '../../core/harnesses';
import { objectBlobStore } from '../../infra/object-store/object-blob-store';
import { createRun, getRun, waitForState } from './runs';
import { uniqueName, type TestContext } from './test-context';

/** A CLI's output of one invocation, as lines of its event stream, and the entries it must become. */
export interface ReplayScript {
  lines: Record<string, unknown>[];
  /** [kind, text or output] of each transcript entry, in order. */
  entries: [string, string][];
  /** The usage the lines report, which the run's sums must hold once. */
  usage?: Record<string, number>;
}

/**
 * An interrupted invocation's output (invocation-output.ts), of which its worker recorded the
 * first `recordedLive` lines, replayed twice, the first time with a truncated last line: each
 * entry must be recorded once, in order, under the invocation's keys, with one raw artifact, and
 * the usage it reported counted once.
 */
export async function expectReplayRecordsOnce(
  ctx: TestContext,
  type: CliHarnessType,
  script: (marker: string) => ReplayScript,
  recordedLive: number,
): Promise<void> {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName(`${type}-replay`);
  ctx.model.script(marker, () => ({ text: 'ok' }));
  // Any run of the team will do: what is replayed is recorded by its harness type's translator.
  // Its workspace stays (the default idle timeout): removing it would take the output directory along.
  const runId = await createRun(ctx, key, { prompt: `Say ok ${marker}` });
  await waitForState(ctx, key, runId, ['SUCCEEDED'], undefined, 60_000);
  const { lines, entries, usage } = script(marker);
  // The run's CLI state, as a harness run has it: where the invocation's usage is summed.
  await ctx.dataSource.query(`INSERT INTO run_harness_state (run_id, harness) VALUES ($1, $2)`, [runId, type]);
  const text = lines.map((line) => `${JSON.stringify(line)}\n`);
  const recording = invocationRecording(
    {
      dataSource: ctx.dataSource,
      blobs: objectBlobStore(ctx.objectStore),
      outputLimitBytes: 64 * 1024,
      workspaceRoot: ctx.config.workspace.dir,
    },
    { runId, type, title: type },
  );
  // Turn 9, attempt 1: its worker recorded the first lines before it died.
  const at = { turn: 9, step: 0, attempt: '1' };
  const live = recording.recorder(at);
  live.lines.write(Buffer.from(text.slice(0, recordedLive).join('')));
  await live.transcript.flushed();
  const output = await createInvocationOutput(ctx.config.workspace.dir, runId, at);
  await releaseInvocationOutput(output, false);
  // A truncated last line, as a SIGKILL can leave it, is no entry.
  writeFileSync(output.path, `${text.join('')}{"type":"ite`);
  await recording.recordLeftOvers();
  if (existsSync(output.path)) throw new Error('the replayed output is still on disk');
  // Once more, as a step that died while replaying would leave it.
  writeFileSync(output.path, text.join(''));
  await recording.recordLeftOvers();

  const turn9 = (await ctx.dataSource.query(
    `SELECT kind, payload->>'text' AS text, payload->>'output' AS output FROM run_events
      WHERE run_id = $1 AND turn = 9 AND kind <> 'tool_call_started' ORDER BY id`,
    [runId],
  )) as { kind: string; text: string | null; output: string | null }[];
  const artifacts = (await getRun(ctx, key, runId)).artifacts as { data: { filename: string } }[];
  const [state] = (await ctx.dataSource.query(`SELECT usage FROM run_harness_state WHERE run_id = $1`, [runId])) as {
    usage: Record<string, number> | null;
  }[];
  expect({
    entries: turn9.map((e) => [e.kind, e.text ?? e.output]),
    rawStreams: artifacts.filter((a) => a.data.filename === `${type}-t9-s0-a1.jsonl`).length,
    usage: state?.usage ?? null,
  }).toEqual({ entries, rawStreams: 1, usage: usage ?? null });
}
