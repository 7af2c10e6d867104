import { createRun, transcript, waitForState } from './helpers/runs';
import { createTestContext, uniqueName, type TestContext } from './helpers/test-context';

/**
 * A harness CLI that runs out of memory fails its run as `budget_exceeded`, with a message that
 * names AGENT_SANDBOX_MEMORY_MB and its value: Claude Code (a Bun executable) and Gemini CLI (on
 * Node), each in a run whose limit is below what its runtime needs, against the scripted model.
 */
type Status = { message: string; error_code: string; retryable?: boolean };

let claudeCtx: TestContext;
let geminiCtx: TestContext;
beforeAll(async () => {
  [claudeCtx, geminiCtx] = await Promise.all([
    // Claude Code's runtime cannot reserve its address space within a 512 MiB data limit.
    createTestContext({ env: { ANTHROPIC_API_KEY: 'sk-ant-memory-tests', AGENT_SANDBOX_MEMORY_MB: '512' } }),
    // Gemini CLI's Node cannot start within a 128 MiB data limit (Node 24 cannot reserve its code
    // range; an older Node, told a heap of 96 MiB, cannot load the CLI into it).
    createTestContext({ env: { GEMINI_API_KEY: 'AIza-memory-tests', AGENT_SANDBOX_MEMORY_MB: '128' } }),
  ]);
});
afterAll(async () => {
  await Promise.all([claudeCtx?.close(), geminiCtx?.close()]);
});

async function failedRun(
  ctx: TestContext,
  harness: Record<string, string>,
): Promise<{ status: Status; marker: string; runId: string }> {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName(`memory-${harness.type!}`);
  ctx.model.script(marker, () => ({ text: 'never asked' }));
  const runId = await createRun(ctx, key, { prompt: `Say hello ${marker}`, config: { harness } });
  const run = await waitForState(ctx, key, runId, ['FAILED'], undefined, 120_000);
  return { status: run.status_message as Status, marker, runId };
}

test('Claude Code aborting for want of memory fails the run as budget_exceeded, naming AGENT_SANDBOX_MEMORY_MB=512', async () => {
  const { status, marker, runId } = await failedRun(claudeCtx, { type: 'claude' });
  expect(status).toEqual({
    error_code: 'budget_exceeded',
    retryable: false,
    message: expect.stringMatching(/^Claude Code ran out of memory: its runtime aborted \(status 134\)/),
  });
  expect(status.message).toContain("the run's memory limit of 512 MiB (AGENT_SANDBOX_MEMORY_MB=512");
  // It died before asking the model anything; the transcript says the same as the status.
  expect(claudeCtx.model.calls(marker)).toHaveLength(0);
  const states = (await transcript(claudeCtx, runId)).filter((e) => e.kind === 'state');
  expect(states.at(-1)!.payload).toMatchObject({ state: 'FAILED', status_message: { error_code: 'budget_exceeded' } });
});

test("Gemini CLI's Node running out of its heap fails the run as budget_exceeded, naming AGENT_SANDBOX_MEMORY_MB=128", async () => {
  const { status, marker } = await failedRun(geminiCtx, { type: 'gemini', model_id: 'gemini-2.5-flash' });
  expect(status).toEqual({
    error_code: 'budget_exceeded',
    retryable: false,
    message: expect.stringMatching(/^Gemini CLI ran out of memory: its runtime aborted \(status 13[34]\)/),
  });
  expect(status.message).toContain("the run's memory limit of 128 MiB (AGENT_SANDBOX_MEMORY_MB=128");
  expect(geminiCtx.model.calls(marker)).toHaveLength(0);
});
