import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { ALL_ERROR_CODES } from '../../core/error-codes';
import { DOCS_ASSETS } from './docs-assets';
import { z } from '../../core/schemas/zod';
import { READINESS_CHECKS } from '../routes/health-routes';
import { registerOperation, signatureParameters } from './common';

const html = (description: string) => ({
  status: 200 as const,
  description,
  contentType: 'text/html',
  schema: z.string(),
});

const readinessSchema = z
  .object({
    status: z.enum(['ready', 'degraded', 'unavailable']).openapi({
      description:
        '`ready`: every check is `ok`. `degraded`: PostgreSQL answers (reads are served) but another check failed. `unavailable`: PostgreSQL does not answer (503).',
    }),
    accepts_runs: z.boolean().openapi({
      description:
        'Whether PostgreSQL and Temporal both answer: creates, follow-ups and cancels are accepted (else they answer 503 `resource_unavailable`). False in restore mode too.',
    }),
    restore_mode: z.literal(true).optional().openapi({
      description:
        'Present while the operator runs the service in restore mode (RESTORE_MODE=true, after restoring its database): reads are served; new runs, forks and follow-ups answer 503 `resource_unavailable`.',
    }),
    checks: z.partialRecord(z.enum(READINESS_CHECKS), z.enum(['ok', 'unavailable'])).openapi({
      description: '`database`, `temporal`, and `worker` where this process runs one.',
    }),
    run_limits: z.string().optional().openapi({
      description:
        "Where this process runs a worker: how it limits each run's processes together (a cgroup per run), or that it does not (AGENT_RUN_LIMITS=off).",
    }),
    harnesses: z.record(z.string(), z.string()).optional().openapi({
      description: 'Where this process runs a worker: the harnesses it offers, with their CLI versions.',
    }),
  })
  .openapi('Readiness');

/** The routes outside the API proper: health, the transcript page, the error reference, this document and its page. */
export function registerServiceOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'get',
    path: '/healthz',
    operationId: 'health',
    summary: 'Liveness: the process answers',
    tags: ['Service'],
    auth: false,
    responses: [{ status: 200, description: 'Alive.', schema: z.object({ status: z.literal('ok') }) }],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/metrics',
    operationId: 'metrics',
    summary: 'Prometheus metrics of this process (docs/operations.md "Metrics")',
    description:
      'Prometheus text format. Takes `Authorization: Bearer <METRICS_BEARER_TOKEN>` (not an API key) when the operator sets that token, which every service reachable beyond loopback has; open only on a loopback-bound service without one.',
    tags: ['Service'],
    auth: 'metrics-token',
    responses: [
      {
        status: 200,
        description: 'The metrics.',
        contentType: 'text/plain; version=0.0.4',
        schema: z.string(),
      },
    ],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/readyz',
    operationId: 'ready',
    summary: 'Readiness: PostgreSQL answers (reads); `accepts_runs`: Temporal too (runs)',
    description:
      '200 while PostgreSQL answers, since reads need nothing else, with `status` `degraded` and `accepts_runs` false while Temporal does not; 503 while PostgreSQL does not. `require` makes a strict probe: 503 unless every check it names is `ok` too (`?require=temporal` for one that wants runs accepted).',
    tags: ['Service'],
    auth: false,
    query: z.object({
      require: z.string().optional().openapi({
        description:
          'Checks that must be `ok` for a 200, comma-separated: `database` (always required), `temporal`, `worker` (where this process runs one).',
        example: 'temporal',
      }),
    }),
    responses: [
      {
        status: 200,
        description: 'PostgreSQL answers: reads are served (`accepts_runs` says whether runs are).',
        schema: readinessSchema,
      },
      {
        status: 503,
        description: 'PostgreSQL does not answer, or a check named in `require` failed: `checks` names what is down.',
        schema: readinessSchema,
      },
    ],
    errors: [400],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/openapi.json',
    operationId: 'getOpenApiDocument',
    errors: [400],
    summary: 'This document',
    tags: ['Service'],
    auth: false,
    responses: [
      {
        status: 200,
        description: 'The OpenAPI 3.1 document of this service.',
        schema: z.object({ openapi: z.string(), info: z.object({ title: z.string(), version: z.string() }) }),
      },
    ],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/',
    operationId: 'getLandingPage',
    summary: 'The landing page: links to the API reference, the Temporal UI and the health endpoints',
    description: 'HTML for a browser; `{service, links}` as JSON to a client that asks for `application/json`.',
    tags: ['Service'],
    auth: false,
    responses: [html('A page of links.')],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/docs',
    operationId: 'getApiReference',
    summary: 'The API reference page',
    tags: ['Service'],
    auth: false,
    responses: [html('A page that renders this document (Swagger UI, served by this service).')],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/docs/{asset}',
    operationId: 'getApiReferenceAsset',
    summary: 'A script, style sheet or icon of the API reference page',
    tags: ['Service'],
    auth: false,
    params: z.object({ asset: z.enum(Object.keys(DOCS_ASSETS) as [string, ...string[]]) }),
    responses: [
      {
        status: 200,
        description: 'The file.',
        contentType: '*/*',
        schema: z.string().openapi({ format: 'binary' }),
      },
    ],
    errors: [404],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/sessions/{sessionId}',
    operationId: 'getTranscriptPage',
    summary: "A run's transcript page (its `session_link`)",
    description:
      "Opened with the run's `session_link` as the API gave it: its signature is the capability (no key is needed; the session id alone opens nothing) until `expires`, SESSION_LINK_TTL_SECONDS after the read of the run that gave it. Without `after`/`before`, the newest events. Other query parameters are ignored (chat apps append tracking parameters to shared links).",
    tags: ['Service'],
    auth: false,
    params: z.object({ sessionId: z.string().openapi({ param: { description: "The run's `session_id`." } }) }),
    query: z.object({
      ...signatureParameters,
      after: z
        .string()
        .regex(/^\d{1,18}$/)
        .optional()
        .openapi({ description: 'Events after this event id.' }),
      before: z
        .string()
        .regex(/^\d{1,18}$/)
        .optional()
        .openapi({ description: 'Events before this event id.' }),
    }),
    responses: [
      html('The transcript page.'),
      {
        status: 403,
        description:
          'A page saying that the link expired or is not valid (altered, cut short), and how to get a fresh one; the same whether or not the session exists.',
        contentType: 'text/html',
        schema: z.string(),
      },
    ],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/errors',
    operationId: 'getErrorReference',
    summary: 'The error reference',
    tags: ['Service'],
    auth: false,
    responses: [html('Every error code, what it means and what to do.')],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/errors/{code}',
    operationId: 'getErrorCode',
    summary: 'One error code of the error reference',
    description: 'Where the `type` of every problem document points.',
    tags: ['Service'],
    auth: false,
    params: z.object({ code: z.enum(ALL_ERROR_CODES) }),
    responses: [html('The error code.')],
    errors: [404],
  });

  const redirect = (path: string, operationId: string, summary: string, param: string, answer: z.ZodObject) =>
    registerOperation(registry, {
      method: 'get',
      path,
      operationId,
      summary,
      description:
        'Needs no key (the official clients send none): the answer is another id, which opens nothing by itself (a transcript page needs its signed `session_link`). An unknown id is 404.',
      tags: ['Redirects'],
      auth: false,
      params: z.object({ [param]: z.string() }),
      responses: [{ status: 200, description: 'Found.', schema: answer }],
      errors: [400, 404],
    });
  redirect(
    '/api/v1/agent/sessions/{sessionId}/redirect',
    'sessionRedirect',
    'The conversation of a session',
    'sessionId',
    z.object({ conversation_id: z.string() }),
  );
  redirect(
    '/api/v1/agent/conversations/{conversationId}/redirect',
    'conversationRedirect',
    'The latest session of a conversation',
    'conversationId',
    z.object({ session_id: z.string() }),
  );
}
