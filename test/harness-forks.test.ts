import { existsSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { auth, createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/**
 * A fork of a CLI harness run (the real CLIs, against the scripted model) resumes the source's
 * CLI session as of the fork's checkpoint, from the session files that checkpoint's home holds.
 */

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({
    env: {
      ANTHROPIC_API_KEY: 'sk-ant-key-for-fork-tests',
      OPENAI_API_KEY: 'sk-openai-key-for-fork-tests',
      GEMINI_API_KEY: 'AIza-key-for-fork-tests',
    },
  });
});
afterAll(async () => {
  await ctx?.close();
});

jest.setTimeout(360_000);

const claude = { harness: { type: 'claude' } };
const codex = { harness: { type: 'codex', reasoning_level: 'low' } };
const gemini = { harness: { type: 'gemini', model_id: 'gemini-2.5-flash' } };

/** Prints the command line of every process in the sandbox (it sees only the run's own): the CLI's among them. */
const COMMAND_LINES = `for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done`;

type Checkpoint = { checkpoint_id: string; turn: number; step: number };

async function checkpointAt(key: string, runId: string, turn: number, step: number): Promise<Checkpoint> {
  const res = await ctx.api.get(`/api/v1/agent/runs/${runId}/checkpoints`).set(auth(key));
  expect(res.status).toBe(200);
  const found = (res.body.checkpoints as Checkpoint[]).find((c) => c.turn === turn && c.step === step);
  if (!found) throw new Error(`run ${runId} has no checkpoint at turn ${turn} step ${step}`);
  return found;
}

/** The CLI session the service keeps for the run (the one its next invocation resumes). */
async function sessionOf(runId: string): Promise<string | null> {
  const [row] = (await ctx.dataSource.query(`SELECT session_id FROM run_harness_state WHERE run_id = $1`, [runId])) as {
    session_id: string | null;
  }[];
  return row?.session_id ?? null;
}

async function fork(key: string, sourceId: string, checkpointId: string, prompt: string): Promise<string> {
  const res = await ctx.api
    .post(`/api/v1/agent/runs/${sourceId}/fork`)
    .set(auth(key))
    .send({ checkpoint_id: checkpointId, prompt });
  expect(res.status).toBe(201);
  return res.body.run_id as string;
}

const homeOf = (runId: string) => path.join(ctx.config.workspace.dir, '.sandbox', runId, 'home');

/** The Claude Code sessions whose files are in the run's home. */
function claudeSessionFiles(runId: string): string[] {
  const projects = path.join(homeOf(runId), '.claude', 'projects');
  if (!existsSync(projects)) return [];
  return readdirSync(projects).flatMap((p) =>
    readdirSync(path.join(projects, p))
      .filter((f) => f.endsWith('.jsonl'))
      .map((f) => f.slice(0, -'.jsonl'.length)),
  );
}

/** The outputs of the run's tool calls, joined. */
async function toolOutput(runId: string): Promise<string> {
  return (await transcript(ctx, runId))
    .filter((e) => e.kind === 'tool_call')
    .map((e) => String(e.payload.output))
    .join('\n');
}

async function notices(runId: string): Promise<string[]> {
  return (await transcript(ctx, runId)).filter((e) => e.kind === 'notice').map((e) => String(e.payload.message));
}

test("a fork of a Claude Code run resumes the session its checkpoint holds (the source's as of that step), under an id of its own", async () => {
  const { key } = await ctx.newTeamKey();
  // The fork's script first: its conversation holds the source's marker too, and the first script found answers.
  const forkMarker = uniqueName('claude-fork');
  ctx.model.script(forkMarker, (_req, call) =>
    call === 1
      ? {
          text: 'Looking around.',
          toolCalls: [{ name: 'Bash', arguments: { command: `${COMMAND_LINES}; cat a.txt` } }],
        }
      : { text: 'fork done' },
  );
  const marker = uniqueName('claude-fork-source');
  ctx.model.script(marker, (_req, call) =>
    call % 2 === 1
      ? { text: `step ${call}`, toolCalls: [{ name: 'Bash', arguments: { command: `echo turn${call} > a.txt` } }] }
      : { text: `answer ${call}` },
  );
  const sourceId = await createRun(ctx, key, { prompt: `Work ${marker}`, config: claude });
  await waitForState(ctx, key, sourceId, ['SUCCEEDED'], undefined, 120_000);
  const firstSession = (await sessionOf(sourceId))!;
  const afterTurnOne = await checkpointAt(key, sourceId, 1, 1);

  // The source's session then changes: its files gone, turn 2 goes on in a new session (the recap).
  rmSync(path.join(homeOf(sourceId), '.claude'), { recursive: true });
  const followup = `Second part ${uniqueName('f')}`;
  expect(
    (await ctx.api.post(`/api/v1/agent/runs/${sourceId}/followups`).set(auth(key)).send({ message: followup })).status,
  ).toBe(200);
  await ctx.model.waitForCalls(marker, 4);
  expect((await waitForState(ctx, key, sourceId, ['SUCCEEDED'], undefined, 120_000)).status_message).toEqual({
    message: 'answer 4',
  });
  const secondSession = (await sessionOf(sourceId))!;
  expect(secondSession).not.toBe(firstSession);

  // Forked after turn 1: the session then was the first one, whose files that checkpoint's home holds.
  const forkId = await fork(key, sourceId, afterTurnOne.checkpoint_id, `Go on ${forkMarker}`);
  expect((await waitForState(ctx, key, forkId, ['SUCCEEDED'], undefined, 120_000)).status_message).toEqual({
    message: 'fork done',
  });

  // The CLI was told to resume the first session, forking it into a new id.
  const output = await toolOutput(forkId);
  const commandLine = output.split('\n').find((l) => l.includes(' --resume '));
  expect(commandLine).toContain(` --resume ${firstSession} --fork-session `);
  expect(output).toContain('turn1');
  expect(output).not.toContain('turn3');
  // It found the session: the model got turn 1 as the session's own messages, then the fork's prompt.
  const said = ctx.model.calls(forkMarker)[0]!.messages.map((m) => `${m.role}: ${m.content}`);
  expect(said.find((m) => m.includes(`Work ${marker}`))).toMatch(/^user: /);
  expect(said).toContain('assistant: answer 2');
  expect(said.at(-1)).toContain(`Go on ${forkMarker}`);
  expect(said.join('\n')).not.toContain(followup);
  expect(said.join('\n')).not.toContain('User: Work');
  expect((await notices(forkId)).filter((n) => n.includes('could not resume'))).toEqual([]);

  // The fork's session is its own: a new id, its file beside the source's first one from the checkpoint.
  const forkSession = (await sessionOf(forkId))!;
  expect([firstSession, secondSession]).not.toContain(forkSession);
  expect(claudeSessionFiles(forkId).sort()).toEqual([firstSession, forkSession].sort());
  expect(claudeSessionFiles(sourceId)).toEqual([secondSession]);
});

test("a fork whose checkpoint's files lack the session it names goes on in a new session told the source's conversation", async () => {
  const { key } = await ctx.newTeamKey();
  const forkMarker = uniqueName('claude-fork-lost');
  ctx.model.script(forkMarker, () => ({ text: 'fork recapped' }));
  const marker = uniqueName('claude-fork-lost-source');
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? { text: 'Writing.', toolCalls: [{ name: 'Bash', arguments: { command: 'echo one > a.txt' } }] }
      : { text: `answer ${call}` },
  );
  const sourceId = await createRun(ctx, key, { prompt: `Work ${marker}`, config: claude });
  await waitForState(ctx, key, sourceId, ['SUCCEEDED'], undefined, 120_000);
  const checkpoint = await checkpointAt(key, sourceId, 1, 1);
  // As if the CLI had kept that session's files where no checkpoint takes them.
  const missing = randomUUID();
  await ctx.dataSource.query(`UPDATE checkpoints SET harness_session_id = $2 WHERE checkpoint_id = $1`, [
    checkpoint.checkpoint_id,
    missing,
  ]);

  const forkId = await fork(key, sourceId, checkpoint.checkpoint_id, `Go on ${forkMarker}`);
  expect((await waitForState(ctx, key, forkId, ['SUCCEEDED'], undefined, 120_000)).status_message).toEqual({
    message: 'fork recapped',
  });
  const calls = ctx.model.calls(forkMarker);
  expect(calls).toHaveLength(1);
  const told = calls[0]!.messages.map((m) => m.content).join('\n');
  expect(told).toContain(`User: Work ${marker}`);
  expect(told).toContain('You: answer 2');
  expect(told.indexOf('You: answer 2')).toBeLessThan(told.indexOf(`Go on ${forkMarker}`));
  expect((await notices(forkId)).filter((n) => n.includes('could not resume'))).toEqual([
    `Claude Code could not resume the session ${missing} of the run it was forked from (the checkpoint's files do not hold it); a new session continues the conversation from its transcript.`,
  ]);
  expect(await sessionOf(forkId)).not.toBe(missing);
});

/** Codex and Gemini CLI have no way to fork a session they resume: the fork continues the source's id in its own copy. */
test.each([
  {
    title: 'Codex CLI',
    config: codex,
    command: (cmd: string) => ({ name: 'exec_command', arguments: { cmd } }),
    resumes: (session: string) => new RegExp(` exec resume .* ${session} Go on `),
  },
  {
    title: 'Gemini CLI',
    config: gemini,
    command: (command: string) => ({ name: 'run_shell_command', arguments: { command } }),
    resumes: (session: string) => new RegExp(` --resume ${session} `),
  },
])(
  "a fork of a $title run resumes the source's session from its checkpoint's files",
  async ({ config, command, resumes }) => {
    const { key } = await ctx.newTeamKey();
    const forkMarker = uniqueName('fork');
    ctx.model.script(forkMarker, (_req, call) =>
      call === 1 ? { text: '', toolCalls: [command(`${COMMAND_LINES}; cat a.txt`)] } : { text: 'fork done' },
    );
    const marker = uniqueName('fork-source');
    ctx.model.script(marker, (_req, call) =>
      call === 1 ? { text: '', toolCalls: [command('echo one > a.txt')] } : { text: `answer ${call}` },
    );
    const sourceId = await createRun(ctx, key, { prompt: `First task ${marker}`, config });
    await waitForState(ctx, key, sourceId, ['SUCCEEDED'], undefined, 120_000);
    const session = (await sessionOf(sourceId))!;
    const checkpoint = await checkpointAt(key, sourceId, 1, 1);

    const forkId = await fork(key, sourceId, checkpoint.checkpoint_id, `Go on ${forkMarker}`);
    expect((await waitForState(ctx, key, forkId, ['SUCCEEDED'], undefined, 120_000)).status_message).toEqual({
      message: 'fork done',
    });
    const output = await toolOutput(forkId);
    expect(output).toMatch(resumes(session));
    expect(output).toContain('one');
    const said = ctx.model.calls(forkMarker)[0]!.messages.map((m) => `${m.role}: ${m.content}`);
    expect(said.some((m) => m.startsWith('user: ') && m.includes(`First task ${marker}`))).toBe(true);
    expect(said.some((m) => m.startsWith('assistant: ') && m.includes('answer '))).toBe(true);
    expect(said.at(-1)).toContain(`Go on ${forkMarker}`);
    expect((await notices(forkId)).filter((n) => n.includes('could not resume'))).toEqual([]);
  },
);
