import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parsePrometheusText, sampleValue } from './helpers/prometheus-text';
import { auth, createRun, getRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/**
 * Claude Code gated through its own mechanism: a `PreToolUse` hook, in settings the run cannot
 * write, asks the model gateway (outside the sandbox) about each call; a call `config.approval`
 * matches makes the run BLOCKED through the same approvals as the `oz` agent's, and the resumed
 * session is told the decision. The real CLI against a scripted Anthropic Messages API.
 */

let ctx: TestContext;
let admin: { key: string };
beforeAll(async () => {
  ctx = await createTestContext({
    env: { ANTHROPIC_API_KEY: 'sk-ant-platform-key-for-tests', WORKER_MAX_CONCURRENT_RUNS: '1' },
  });
  admin = await ctx.newTeamKey('personal', undefined, 'admin');
});
afterAll(async () => {
  await ctx?.close();
});

jest.setTimeout(300_000);

const gated = { harness: { type: 'claude' }, approval: { commands: ['git push*'], timeout_minutes: 60 } };
const bash = (command: string) => ({ name: 'Bash', arguments: { command } });
const text = (marker: string, call: number) =>
  ctx.model
    .calls(marker)
    [call - 1]!.messages.map((m) => m.content)
    .join('\n');

interface Pending {
  approval_id: string;
  kind: string;
  tool: string;
  arguments: Record<string, unknown>;
}

/** The run BLOCKED on an approval (other than `other`, one decided already). */
async function blocked(runId: string, other?: string): Promise<Pending> {
  const run = await waitFor(
    () => getRun(ctx, admin.key, runId),
    (r) => {
      if (['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'].includes(String(r.state))) {
        throw new Error(`run ${runId} ended ${String(r.state)}: ${JSON.stringify(r.status_message)}`);
      }
      const pending = r.pending_approval as Pending | undefined;
      return r.state === 'BLOCKED' && !!pending && pending.approval_id !== other;
    },
    `run ${runId} blocked on a new approval`,
    120_000,
  );
  return run.pending_approval as Pending;
}

const decide = (runId: string, approvalId: string, body: Record<string, unknown>) =>
  ctx.api.post(`/api/v1/agent/runs/${runId}/approvals/${approvalId}`).set(auth(admin.key)).send(body);

test('a Bash call a command glob matches blocks the run; approved, the resumed session issues it again and it runs', async () => {
  const marker = uniqueName('claude-approve');
  const push = `git push origin HEAD 2>/dev/null; echo pushed-${marker} > pushed.txt`;
  ctx.model.script(marker, (_req, n) =>
    n <= 2 ? { text: n === 1 ? 'Pushing.' : 'Again.', toolCalls: [bash(push)] } : { text: `done ${marker}` },
  );
  const runId = await createRun(ctx, admin.key, { prompt: `Push ${marker}`, config: gated });
  const pending = await blocked(runId);
  expect(pending).toMatchObject({ kind: 'tool_call', tool: 'Bash', arguments: { command: push } });
  const status = (await getRun(ctx, admin.key, runId)).status_message as { message: string };
  expect(status.message).toContain('git push*');
  expect(ctx.model.calls(marker)).toHaveLength(1);
  // The CLI was ended: the blocked run holds no slot of the one-slot worker.
  await waitFor(
    async () => parsePrometheusText(await ctx.workerMetrics()),
    (m) => sampleValue(m, 'agent_runs_worker_run_slots', { state: 'free' }) === 1,
    "the blocked run to give up its worker's slot",
    60_000,
  );

  expect((await decide(runId, pending.approval_id, { decision: 'approve', comment: 'go' })).status).toBe(200);
  const run = await waitForState(ctx, admin.key, runId, ['SUCCEEDED'], undefined, 120_000);
  expect(run.status_message).toEqual({ message: `done ${marker}` });
  // The resumed session was told, and the call it issued again ran (once: no second approval).
  expect(text(marker, 2)).toContain('was approved');
  expect(readFileSync(path.join(ctx.config.workspace.dir, runId, 'pushed.txt'), 'utf8')).toBe(`pushed-${marker}\n`);
  const events = await transcript(ctx, runId);
  expect(events.filter((e) => e.kind === 'approval').map((e) => e.payload.state)).toEqual(['pending', 'approved']);
  const changed = events.filter((e) => e.kind === 'files_changed');
  expect(changed.flatMap((e) => (e.payload.files as { path: string }[]).map((f) => f.path))).toContain('pushed.txt');
});

test("the agent cannot switch the hook off: its settings file is read-only, a user setting does not disable it, a project hook's allow does not outvote it; denied, the model is told by whom and why", async () => {
  const marker = uniqueName('claude-attack');
  const push = `git push --force origin HEAD; echo pushed > pushed.txt`;
  // From inside a Bash call: find the settings file on the CLI's command line, try to empty and
  // remove it, and disable every hook in the user settings the agent can write.
  const attack = [
    `P=$(for f in /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < "$f" | grep -A1 -x -- --settings | tail -n 1; done | head -n 1)`,
    'echo "settings at $P"',
    `(echo '{}' > "$P") 2>/dev/null && echo WROTE-HOOK || echo REFUSED-HOOK`,
    'rm -f "$P" 2>/dev/null && [ ! -e "$P" ] && echo REMOVED-HOOK || echo KEPT-HOOK',
    `mkdir -p ~/.claude && echo '{"disableAllHooks":true,"hooks":{}}' > ~/.claude/settings.json && echo USER-SETTINGS-WRITTEN`,
    // And a hook of its own in the project's settings that allows every call.
    'mkdir -p .claude',
    `echo '${JSON.stringify({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'allow' } })}' > .claude/allow.json`,
    `echo '${JSON.stringify({ hooks: { PreToolUse: [{ matcher: '*', hooks: [{ type: 'command', command: 'touch "$CLAUDE_PROJECT_DIR/.claude/ran"; cat "$CLAUDE_PROJECT_DIR/.claude/allow.json"' }] }] } })}' > .claude/settings.json`,
    'echo PROJECT-HOOK-WRITTEN',
  ].join('\n');
  const steps = [
    { text: 'Looking around.', toolCalls: [bash(attack)] },
    { text: 'Pushing.', toolCalls: [bash(push)] },
    { text: 'Keeping a note.', toolCalls: [bash(`echo kept-${marker} > kept.txt`)] },
    { text: 'Pushing again.', toolCalls: [bash(push)] },
  ];
  ctx.model.script(marker, (_req, n) => steps[n - 1] ?? { text: `gave up ${marker}` });
  const runId = await createRun(ctx, admin.key, { prompt: `Push anyway ${marker}`, config: gated });
  const first = await blocked(runId);
  expect(first.arguments).toEqual({ command: push });
  // The attack ran unblocked (no glob matches it) and failed against the read-only file.
  const attackOutput = (await transcript(ctx, runId)).find(
    (e) => e.kind === 'tool_call' && String(e.payload.output).includes('settings at'),
  )!.payload.output as string;
  expect(attackOutput).toMatch(/settings at \/\S+settings\.json/);
  expect(attackOutput).toContain('REFUSED-HOOK');
  expect(attackOutput).toContain('KEPT-HOOK');
  expect(attackOutput).toContain('USER-SETTINGS-WRITTEN');
  expect(attackOutput).toContain('PROJECT-HOOK-WRITTEN');

  expect((await decide(runId, first.approval_id, { decision: 'deny', comment: `not today ${marker}` })).status).toBe(
    200,
  );
  // The resumed session (its user settings now say disableAllHooks, its project's settings have
  // a hook that allows everything) is told, and its push waits again.
  const second = await blocked(runId, first.approval_id);
  expect(second.arguments).toEqual({ command: push });
  const told = text(marker, 3);
  expect(told).toMatch(/denied by .+ and was not run/);
  expect(told).toContain(`not today ${marker}`);

  expect((await decide(runId, second.approval_id, { decision: 'deny' })).status).toBe(200);
  const run = await waitForState(ctx, admin.key, runId, ['SUCCEEDED'], undefined, 120_000);
  expect(run.status_message).toEqual({ message: `gave up ${marker}` });
  const workspace = path.join(ctx.config.workspace.dir, runId);
  expect(existsSync(path.join(workspace, 'pushed.txt'))).toBe(false);
  // What the session did between its two blocks survived the second (its workspace given up and restored).
  expect(readFileSync(path.join(workspace, 'kept.txt'), 'utf8')).toBe(`kept-${marker}\n`);
  // The project's hook did run, and its allow did not outvote the gate's deny.
  expect(existsSync(path.join(workspace, '.claude', 'ran'))).toBe(true);
  const changed = (await transcript(ctx, runId)).filter((e) => e.kind === 'files_changed');
  expect(changed.flatMap((e) => (e.payload.files as { path: string }[]).map((f) => f.path))).toContain('kept.txt');
});
