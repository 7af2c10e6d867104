import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startReconciler } from '../api/reconciler';
import { backdateRuns } from './helpers/quiet-runs';
import { loadConfig } from '../core/config';
import { createLogger } from '../core/logger';
import { RUN_WORKFLOW_TYPE, runWorkflowId } from '../workflows/run-contract';
import { auth, waitForState } from './helpers/runs';
import { gate } from './helpers/scripted-model';
import { createTestContext, uniqueName, waitFor, type TestContext } from './helpers/test-context';

/** One span as the OTLP/HTTP JSON exporter sends it, with its attributes flattened. */
interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status: { code?: number; message?: string };
  attributes: Record<string, unknown>;
  service: string;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values?: OtlpValue[] };
}
type OtlpAttributes = { key: string; value: OtlpValue }[] | undefined;

const valueOf = (v: OtlpValue): unknown =>
  v.stringValue ??
  (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
  v.boolValue ??
  v.doubleValue ??
  v.arrayValue?.values?.map(valueOf);
const attributesOf = (list: OtlpAttributes) => Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));

/** A stand-in OpenTelemetry collector: takes OTLP/HTTP JSON on /v1/traces and keeps every body. */
class OtlpCollector {
  readonly bodies: string[] = [];
  readonly headers: http.IncomingHttpHeaders[] = [];
  readonly spans: ExportedSpan[] = [];
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || req.headers['content-type'] !== 'application/json') {
        res.writeHead(415).end();
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      this.bodies.push(body);
      this.headers.push(req.headers);
      const parsed = JSON.parse(body) as {
        resourceSpans?: {
          resource?: { attributes?: OtlpAttributes };
          scopeSpans?: { spans?: (Omit<ExportedSpan, 'attributes' | 'service'> & { attributes?: OtlpAttributes })[] }[];
        }[];
      };
      for (const rs of parsed.resourceSpans ?? []) {
        const service = String(attributesOf(rs.resource?.attributes)['service.name']);
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? [])
            this.spans.push({
              ...s,
              parentSpanId: s.parentSpanId || undefined,
              attributes: attributesOf(s.attributes),
              service,
            });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const collector = new OtlpCollector();
let ctx: TestContext;

beforeAll(async () => {
  const endpoint = await collector.start();
  ctx = await createTestContext({
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=collector%20secret',
      // The workflow ends right after the run, so its own span ends (and is exported) too.
      AGENT_IDLE_TIMEOUT_MINUTES: '0',
    },
  });
});
afterAll(async () => {
  await ctx?.close();
  await collector.stop();
});

/** Flushes the process's spans until the trace holds what `done` wants. */
async function traceSpans(traceId: string, done: (spans: ExportedSpan[]) => boolean, what: string) {
  return waitFor(
    async () => {
      await ctx.tracing!.flush();
      return collector.spans.filter((s) => s.traceId === traceId);
    },
    done,
    what,
  );
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const SERVER = 2;
const CLIENT = 3;
const STATUS_ERROR = 2;

test('one trace covers POST /agent/runs, the workflow, its activities, the model call and the tool call', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('traced');
  const promptSecret = `sk-proj-${hex(16)}`;
  const toolSecret = `ghp_${hex(16)}`;
  const toolPath = `notes-${hex(4)}.txt`;
  ctx.model.script(marker, (_req, call) =>
    call === 1
      ? {
          text: '',
          totalTokens: 30,
          toolCalls: [{ name: 'write_file', arguments: { path: toolPath, content: `token=${toolSecret}` } }],
        }
      : { text: 'Done.', totalTokens: 12 },
  );
  // The caller's own trace: the API continues it.
  const callerTraceId = hex(16);
  const callerSpanId = hex(8);
  const created = await ctx.api
    .post('/api/v1/agent/runs')
    .set({ ...auth(key), traceparent: `00-${callerTraceId}-${callerSpanId}-01` })
    .send({ prompt: `Use the key ${promptSecret} to deploy ${marker}` });
  expect(created.status).toBe(201);
  const runId = created.body.run_id as string;
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
  await ctx.client.workflow.getHandle(runWorkflowId(runId)).result();

  const named = (spans: ExportedSpan[], name: string) => spans.filter((s) => s.name === name);
  const spans = await traceSpans(
    callerTraceId,
    (all) =>
      named(all, `RunWorkflow:${RUN_WORKFLOW_TYPE}`).length === 1 &&
      named(all, 'execute_tool write_file').length === 1 &&
      named(all, 'chat test-model').length === 2 &&
      named(all, 'RunActivity:runAgentStep').length >= 2,
    'the run’s spans',
  );
  const one = (name: string) => {
    const found = named(spans, name);
    expect([name, found.length]).toEqual([name, 1]);
    return found[0]!;
  };
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const parentOf = (span: ExportedSpan) => byId.get(span.parentSpanId ?? '');

  // The HTTP span continues the caller's trace, named by the route template.
  const request = one('POST /api/v1/agent/runs');
  expect(request).toMatchObject({ parentSpanId: callerSpanId, kind: SERVER });
  expect(request.attributes).toMatchObject({
    'http.request.method': 'POST',
    'http.route': '/api/v1/agent/runs',
    'url.path': '/api/v1/agent/runs',
    'http.response.status_code': 201,
    'agent_runs.request_id': created.headers['x-request-id'],
  });
  // API → Temporal client → workflow → activity → model and tool calls, each a child of the one before.
  const start = one(`StartWorkflow:${RUN_WORKFLOW_TYPE}`);
  expect(parentOf(start)).toBe(request);
  expect(start.attributes).toMatchObject({ temporalWorkflowId: runWorkflowId(runId) });
  const workflow = one(`RunWorkflow:${RUN_WORKFLOW_TYPE}`);
  expect(parentOf(workflow)).toBe(start);
  // What the workflow sink adds: who the workflow is, not its memo (a run's title is its prompt's start).
  expect(workflow.attributes).toMatchObject({ workflowId: runWorkflowId(runId), workflowType: RUN_WORKFLOW_TYPE });
  expect(Object.keys(workflow.attributes)).not.toContain('memo');
  const toolCall = one('execute_tool write_file');
  expect(toolCall.attributes).toMatchObject({
    'gen_ai.tool.name': 'write_file',
    'agent_runs.tool.kind': 'builtin',
    'agent_runs.tool.outcome': 'success',
  });
  const stepActivity = parentOf(toolCall)!;
  expect(stepActivity.name).toBe('RunActivity:runAgentStep');
  expect(stepActivity.attributes).toMatchObject({ temporalWorkflowId: runWorkflowId(runId) });
  const scheduled = parentOf(stepActivity)!;
  expect(scheduled.name).toBe('StartActivity:runAgentStep');
  expect(parentOf(scheduled)).toBe(workflow);

  const modelCalls = named(spans, 'chat test-model');
  for (const call of modelCalls) {
    expect(call.kind).toBe(CLIENT);
    expect(parentOf(call)?.name).toBe('RunActivity:runAgentStep');
    expect(parentOf(parentOf(call)!)?.name).toBe('StartActivity:runAgentStep');
    expect(parentOf(parentOf(parentOf(call)!)!)).toBe(workflow);
  }
  expect(modelCalls.map((c) => c.attributes)).toEqual(
    expect.arrayContaining([
      expect.objectContaining({
        'gen_ai.system': 'openai',
        'gen_ai.request.model': 'test-model',
        'agent_runs.model_id': 'openai/test-model',
        'gen_ai.usage.input_tokens': 15,
        'gen_ai.usage.output_tokens': 15,
        'agent_runs.tool_calls_requested': 1,
      }),
      expect.objectContaining({ 'gen_ai.usage.input_tokens': 6, 'gen_ai.usage.output_tokens': 6 }),
    ]),
  );
  // Every span of the run's trace hangs off another one of it; only the HTTP span off the caller's.
  for (const span of spans) {
    if (span !== request) expect([span.name, parentOf(span)?.spanId]).toEqual([span.name, span.parentSpanId]);
  }
  expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['agent-runs-test']));

  // Neither the prompt's secret nor the tool call's arguments went out, in any attribute or event.
  for (const body of collector.bodies) {
    expect(body).not.toContain(promptSecret);
    expect(body).not.toContain(toolSecret);
    expect(body).not.toContain(toolPath);
  }
  // OTEL_EXPORTER_OTLP_HEADERS reached the collector.
  expect(collector.headers.every((h) => h['x-collector-key'] === 'collector secret')).toBe(true);
});

test('a failed model call is an error span that names the error class, not its message', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('rejected');
  const echoed = `sk-ant-${hex(16)}`;
  ctx.model.script(marker, () => ({ status: 400, error: `your prompt contains ${echoed}` }));
  const traceId = hex(16);
  const created = await ctx.api
    .post('/api/v1/agent/runs')
    .set({ ...auth(key), traceparent: `00-${traceId}-${hex(8)}-01` })
    .send({ prompt: `Go ${marker}` });
  expect(created.status).toBe(201);
  await waitForState(ctx, key, created.body.run_id as string, ['FAILED']);

  const spans = await traceSpans(
    traceId,
    (all) => all.some((s) => s.name === 'chat test-model'),
    'the model call’s span',
  );
  const call = spans.find((s) => s.name === 'chat test-model')!;
  expect(call.status.code).toBe(STATUS_ERROR);
  expect(call.attributes['error.type']).toBe('ProviderRejectedError');
  expect(call.attributes['gen_ai.usage.input_tokens']).toBeUndefined();
  // (Temporal's own activity span does record the failure's message, as its history does.)
  expect(JSON.stringify(call)).not.toContain(echoed);
});

test('an unmatched route is named by its method alone; a 4xx is not an error span', async () => {
  const traceId = hex(16);
  const res = await ctx.api.get(`/api/v1/no-such-thing/${hex(4)}`).set({ traceparent: `00-${traceId}-${hex(8)}-01` });
  expect(res.status).toBe(404);
  const [span] = await traceSpans(traceId, (all) => all.length === 1, 'the request’s span');
  expect(span).toMatchObject({
    name: 'GET',
    kind: SERVER,
    status: expect.not.objectContaining({ code: STATUS_ERROR }),
  });
  expect(span!.attributes['http.response.status_code']).toBe(404);
  expect(span!.attributes['http.route']).toBeUndefined();
});

test('the reconciler’s background checks are not traced', async () => {
  const { key } = await ctx.newTeamKey();
  const marker = uniqueName('reconciled');
  const hold = gate<{ text: string }>();
  ctx.model.script(marker, () => ({ hold: hold.promise }));
  const runId = (await ctx.api.post('/api/v1/agent/runs').set(auth(key)).send({ prompt: marker })).body
    .run_id as string;
  await waitForState(ctx, key, runId, ['INPROGRESS']);
  await ctx.model.waitForCalls(marker, 1);
  // Quiet for longer than test/reconciler.test.ts makes its runs, so this pass meets only this run.
  await backdateRuns(ctx.dataSource, [runId], 3);
  const reconciler = startReconciler({
    dataSource: ctx.dataSource,
    temporal: ctx.client,
    logger: createLogger('error', 'test'),
    intervalSeconds: 3600,
    quietSeconds: 2 * 3600,
  });
  // The pass describes the in-progress run's workflow (and leaves it be); a request's describe of it is traced.
  expect(await reconciler.runOnce()).toEqual([]);
  await reconciler.stop();
  await ctx.client.workflow.getHandle(runWorkflowId(runId)).describe();
  hold.release({ text: 'done' });
  const describes = () =>
    collector.spans.filter(
      (s) => s.name === 'DescribeWorkflow' && s.attributes.temporalWorkflowId === runWorkflowId(runId),
    );
  await waitFor(
    async () => {
      await ctx.tracing!.flush();
      return describes().length;
    },
    (n) => n > 0,
    'the direct describe’s span',
  );
  expect(describes()).toHaveLength(1);
  await waitForState(ctx, key, runId, ['SUCCEEDED']);
});

test('tracing is configured by the standard OpenTelemetry variables, off without an endpoint', () => {
  expect(loadConfig({}).tracing).toBeUndefined();
  expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing).toEqual({
    tracesUrl: 'http://collector:4318/v1/traces',
    headers: {},
    serviceName: undefined,
  });
  expect(
    loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:9999/custom',
      OTEL_EXPORTER_OTLP_HEADERS: 'api-key=a%2Cb,x-tenant=ops',
      OTEL_SERVICE_NAME: 'runs-eu',
    }).tracing,
  ).toEqual({
    tracesUrl: 'http://traces:9999/custom',
    headers: { 'api-key': 'a,b', 'x-tenant': 'ops' },
    serviceName: 'runs-eu',
  });
  expect(
    loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracing,
  ).toBeUndefined();
  expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
  expect(() =>
    loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'novalue' }),
  ).toThrow(/OTEL_EXPORTER_OTLP_HEADERS: must be comma-separated key=value pairs/);
});
