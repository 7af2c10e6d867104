import { type temporal } from '@temporalio/proto';
import { runWorkflowId } from '../../workflows/run-contract';
import type { ChatRequest, Script, ScriptedToolCall } from './scripted-model';
import { auth, type RunBody } from './runs';
import { uniqueName, type TestContext } from './test-context';

type AgentSpec = { type: string; prompt?: string; description?: string };

/** A factory of the team with one agent per spec (named after its type); returns its uid and agents. */
export async function createFactory(
  c: TestContext,
  key: string,
  agents: AgentSpec[],
  instructions?: string,
): Promise<{ uid: string; agents: Record<string, string> }> {
  const created = await c.api
    .post('/api/v1/agent/factories')
    .set(auth(key))
    .send({ name: uniqueName('factory'), description: 'test factory' });
  if (created.status !== 201) throw new Error(`factory not created: ${created.status} ${JSON.stringify(created.body)}`);
  const uid = (created.body as { uid: string }).uid;
  if (instructions) {
    // Instructions come only from a FACTORY.md (the API's factory body has no such field, as the
    // wire contract fixes it); test/factory-dispatch.test.ts covers that path end to end.
    await c.dataSource.query(`UPDATE factories SET instructions = $2 WHERE uid = $1`, [uid, instructions]);
  }
  const byType: Record<string, string> = {};
  for (const agent of agents) {
    const res = await c.api
      .post('/api/v1/agent/identities')
      .set(auth(key))
      .send({
        name: uniqueName(agent.type.toLowerCase()),
        agent_type: agent.type,
        factory_uid: uid,
        ...(agent.prompt ? { prompt: agent.prompt } : {}),
        ...(agent.description ? { description: agent.description } : {}),
      });
    if (res.status !== 201) throw new Error(`agent not created: ${res.status} ${JSON.stringify(res.body)}`);
    byType[agent.type] = (res.body as { uid: string }).uid;
  }
  return { uid, agents: byType };
}

export async function dispatch(c: TestContext, key: string, factoryUid: string, body: Record<string, unknown>) {
  return c.api.post(`/api/v1/agent/factories/${factoryUid}/runs`).set(auth(key)).send(body);
}

export async function listRuns(c: TestContext, key: string, query: string): Promise<RunBody[]> {
  const res = await c.api.get(`/api/v1/agent/runs?${query}`).set(auth(key));
  if (res.status !== 200) throw new Error(`list failed: ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body as { runs: RunBody[] }).runs;
}

/** The tool result the agent got for its call of `tool` (the last one). */
export function toolResult(request: ChatRequest, tool: string): string {
  const calls = request.messages.filter((m) => m.role === 'tool');
  const assistant = request.messages.filter((m) => m.role === 'assistant');
  const ids = assistant.flatMap((m) =>
    ((m.tool_calls ?? []) as { id: string; function: { name: string } }[])
      .filter((c) => c.function.name === tool)
      .map((c) => c.id),
  );
  const result = calls.filter((m) => ids.includes(m.tool_call_id ?? '')).pop();
  if (!result) throw new Error(`no result of ${tool} in the request`);
  return result.content;
}

export async function history(c: TestContext, runId: string): Promise<temporal.api.history.v1.IHistoryEvent[]> {
  return (await c.client.workflow.getHandle(runWorkflowId(runId)).fetchHistory()).events ?? [];
}

/** The text of a marker's payloads (a local activity's marker names its activity type). */
export function markerText(event: temporal.api.history.v1.IHistoryEvent): string {
  const details = event.markerRecordedEventAttributes?.details ?? {};
  return Object.values(details)
    .flatMap((p) => p.payloads ?? [])
    .map((p) => Buffer.from(p.data ?? []).toString('utf8'))
    .join(' ');
}

/**
 * A foreman's script: its first step calls `firstStep` (dispatches, and whatever else), its second
 * waits for the children, and every later one answers `answer`.
 */
export function delegatingForeman(firstStep: ScriptedToolCall[], answer: string, firstText = ''): Script {
  return (_req, call) => {
    if (call === 1) return { text: firstText, toolCalls: firstStep };
    if (call === 2) return { text: '', toolCalls: [{ name: 'wait_for_runs', arguments: {} }] };
    return { text: answer };
  };
}
