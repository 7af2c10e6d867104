import type { OpenAPIRegistry, RouteConfig, ZodRequestBody } from '@asteasolutions/zod-to-openapi';
import { ALL_ERROR_CODES } from '../../core/error-codes';
import { FORGE_WEBHOOK_CHALLENGE } from '../../core/forge-webhooks';
import { z } from '../../core/schemas/zod';

/** The security scheme of every authenticated operation: `Authorization: Bearer <API key>`. */
export const BEARER_AUTH = 'bearerAuth';

/** `/metrics`: `Authorization: Bearer <METRICS_BEARER_TOKEN>` when the operator sets one (always off loopback), else open. */
export const METRICS_TOKEN_AUTH = 'metricsToken';
/** A forge's webhook signature with the operator's FORGE_WEBHOOK_SECRETS (not an API key). */
export const FORGE_SIGNATURE_AUTH = 'forgeSignature';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** RFC 9457 problem document: the body of every error response (api/middleware/error-handler.ts). */
export const problemDocumentSchema = z
  .object({
    type: z.url().openapi({ description: 'URL of the error code in the error reference (`/errors/{error_code}`).' }),
    title: z.string().openapi({ description: 'Short summary of the error code.' }),
    status: z.number().int().min(400).max(599).openapi({ description: 'The HTTP status of the response.' }),
    detail: z.string().openapi({ description: 'What went wrong in this request, and what to fix.' }),
    instance: z.string().openapi({ description: 'The request path.' }),
    error: z.string().openapi({ description: '`title` and `detail` in one string.' }),
    error_code: z.enum(ALL_ERROR_CODES).openapi({ description: 'Machine-readable error code.' }),
    retryable: z.boolean().openapi({ description: 'Whether the same request may succeed later.' }),
    trace_id: z.string().openapi({ description: 'The request id, also sent as `x-request-id`.' }),
  })
  .openapi({ description: 'An error, as RFC 9457 describes it; see `/errors` for the codes.' });

/** `page_info` of every paginated list. */
export const pageInfoSchema = z
  .object({
    has_next_page: z.boolean(),
    next_cursor: z
      .string()
      .optional()
      .openapi({ description: 'Pass as `cursor`, with the same filters, for the next page; absent on the last page.' }),
  })
  .openapi('PageInfo');

export const timestamp = () => z.iso.datetime({ offset: true }).openapi({ example: '2026-11-22T03:04:05.123Z' });

const header = (description: string, schema: Record<string, unknown> = { type: 'string' }, required = true) => ({
  description,
  required,
  schema,
});

/** The `Location` of a redirect to a signed download (core/download-urls.ts). */
export const SIGNED_LOCATION_HEADER = {
  Location: header('A signed URL that works without a key for DOWNLOAD_URL_TTL_SECONDS; follow it.', {
    type: 'string',
    format: 'uri',
  }),
};

/** Headers every response carries. */
const REQUEST_ID_HEADER = {
  'x-request-id': header('The request id (echoed from the request when it sent a sane one).'),
};

/**
 * The RateLimit fields (draft-ietf-httpapi-ratelimit-headers) of every authenticated response
 * while RATE_LIMIT_REQUESTS_PER_MINUTE is on (api/middleware/rate-limit.ts).
 */
const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': header(
    'The per API key request limit: `"api-key";q=<requests>;w=60` (`q` requests per `w` seconds). Absent when the limit is off.',
    { type: 'string', example: '"api-key";q=600;w=60' },
    false,
  ),
  RateLimit: header(
    'Where this API key stands: `"api-key";r=<remaining>;t=<seconds until the window resets>`. Absent when the limit is off.',
    { type: 'string', example: '"api-key";r=599;t=60' },
    false,
  ),
};

/** Headers of every error response. */
const PROBLEM_HEADERS = {
  ...REQUEST_ID_HEADER,
  'x-should-retry': header('Whether retrying the same request can help; the same value as `retryable`.', {
    type: 'string',
    enum: ['true', 'false'],
  }),
};

/**
 * `X-Warp-Team-Uid`, which the newest official client sends as its `team_uid`: every
 * authenticated operation takes it (api/middleware/auth.ts `requireOwnTeam`).
 */
const activeTeamHeader = z
  .string()
  .max(100)
  .optional()
  .openapi('ActiveTeam', {
    param: {
      name: 'X-Warp-Team-Uid',
      in: 'header',
      description:
        "The team the request acts for (the newest client's `team_uid`): a key acts for its own team only, so the header may name that team (or be empty); any other team is 404.",
    },
  });

/** The errors an operation may answer, by status; each is a problem document. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 429 | 500 | 503;

const ERROR_DESCRIPTIONS: Record<ErrorStatus, string> = {
  400: 'The request is invalid (`invalid_request`, `operation_not_supported`, `feature_not_available`); `detail` says what to fix. Nothing was changed.',
  401: 'No API key, a malformed `Authorization` header, or an unknown, revoked or expired key (`authentication_required`; for an expired key `detail` says when it expired).',
  403: 'Not allowed (`not_authorized`): the key may not do this, or a download link is altered or expired.',
  404: 'No such resource in your team (`resource_not_found`); another team’s resources are 404 too.',
  409: 'The state of the target refuses the request, or an `Idempotency-Key` was reused with another body or is still in flight (`conflict`); see `detail` and `retryable`.',
  413: 'The body is larger than the limit (`invalid_request`).',
  415: 'The body is not JSON (`invalid_request`).',
  429: 'Over a rate limit (`rate_limited`): this API key’s requests per minute (`RATE_LIMIT_REQUESTS_PER_MINUTE`) or, creating a run, the team’s runs per hour (`TEAM_MAX_RUNS_PER_HOUR`); `detail` says which. Retry after `Retry-After` seconds. Nothing was changed.',
  500: 'An unexpected error (`internal_error`); quote `trace_id` when reporting it.',
  503: 'A dependency (PostgreSQL or Temporal) is unavailable (`resource_unavailable`); retry after `Retry-After` seconds. Nothing was changed.',
};

const ERROR_RESPONSE_NAMES: Record<ErrorStatus, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

const UNSIGNED_WEBHOOK = 'ForgeWebhookUnsigned';

/** The problem document, and one reusable response per error status, under `components`. */
export function registerErrorComponents(registry: OpenAPIRegistry): void {
  registry.register('ProblemDocument', problemDocumentSchema);
  registry.registerParameter('ActiveTeam', activeTeamHeader);
  for (const [status, name] of Object.entries(ERROR_RESPONSE_NAMES)) {
    const code = Number(status) as ErrorStatus;
    const headers: Record<string, ReturnType<typeof header>> = { ...PROBLEM_HEADERS };
    if (code === 401) headers['WWW-Authenticate'] = header('`Bearer`.', { type: 'string', const: 'Bearer' });
    if (code === 503 || code === 429)
      headers['Retry-After'] = header('Seconds to wait before retrying.', { type: 'string' });
    if (code === 429) Object.assign(headers, RATE_LIMIT_HEADERS);
    registry.registerComponent('responses', name, {
      description: ERROR_DESCRIPTIONS[code],
      headers,
      content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: '#/components/schemas/ProblemDocument' } } },
    });
  }
  // A forge webhook refused for its signature: its challenge names the signature, not a key.
  registry.registerComponent('responses', UNSIGNED_WEBHOOK, {
    description: "The body is not signed with the host's secret (FORGE_WEBHOOK_SECRETS).",
    headers: {
      ...PROBLEM_HEADERS,
      'WWW-Authenticate': header('The signature the forge must send.', {
        type: 'string',
        const: FORGE_WEBHOOK_CHALLENGE,
      }),
    },
    content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: '#/components/schemas/ProblemDocument' } } },
  });
}

const problemResponse = (status: ErrorStatus) => ({ $ref: `#/components/responses/${ERROR_RESPONSE_NAMES[status]}` });

/**
 * A response of the operation's own: a JSON body by default, or `content` as given; none for 204
 * and 302. (403: a page that says why, where a browser asks: the transcript page's refusal.)
 */
export interface Success {
  status: 200 | 201 | 202 | 204 | 302 | 304 | 403 | 503;
  description: string;
  schema?: z.ZodType;
  contentType?: string;
  headers?: Record<string, { description: string; required?: boolean; schema?: Record<string, unknown> }>;
  /** Operations this response leads to, by name: which of their parameters come from it. */
  links?: Record<string, Link>;
}

/** An OpenAPI link: `parameters` maps a parameter of `operationId` to a runtime expression. */
export interface Link {
  operationId: string;
  parameters: Record<string, string>;
  description?: string;
}

/** Links from a response that holds a resource's id at `pointer` to the operations taking it as `parameter`. */
export function linksTo(pointer: string, parameter: string, operationIds: string[]): Record<string, Link> {
  return Object.fromEntries(
    operationIds.map((operationId) => [
      operationId,
      { operationId, parameters: { [parameter]: `$response.body#${pointer}` } },
    ]),
  );
}

/** One operation: everything `registerPath` needs, with the errors it can answer listed by status. */
export interface Operation {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI style: `/api/v1/agent/runs/{runId}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  deprecated?: boolean;
  /**
   * Authenticated with an API key (default), open to anyone, with the operator's metrics token
   * when set, or by a forge's signature with the operator's webhook secret.
   */
  auth?: boolean | 'metrics-token' | 'forge-signature';
  params?: z.ZodObject;
  query?: z.ZodObject;
  headers?: z.ZodObject;
  /** The JSON request body; `required: false` when it may be omitted. */
  body?: { schema: z.ZodType; required?: boolean; description?: string };
  responses: Success[];
  /** Errors besides the ones every operation of its kind answers (401 and 429 when authenticated, 500, 503). */
  errors?: ErrorStatus[];
}

/**
 * Registers one operation. Every operation may answer 500 and 503; an authenticated one 401, and
 * 429 with the RateLimit fields on its every answer; one with a body 413 and 415
 * (api/middleware/json-body.ts).
 */
export function registerOperation(registry: OpenAPIRegistry, op: Operation): void {
  const auth = (op.auth ?? true) === true;
  const errors = new Set<ErrorStatus>([...(op.errors ?? []), 500, 503]);
  if (op.auth === 'metrics-token' || op.auth === 'forge-signature') errors.add(401);
  if (auth) {
    errors.add(401);
    // `X-Warp-Team-Uid` naming another team.
    errors.add(404);
    errors.add(429);
  }
  if (op.body) {
    errors.add(400);
    errors.add(413);
    errors.add(415);
  }
  const responses: RouteConfig['responses'] = {};
  for (const success of op.responses) {
    responses[success.status] = {
      description: success.description,
      headers: { ...REQUEST_ID_HEADER, ...(auth ? RATE_LIMIT_HEADERS : {}), ...success.headers },
      ...(success.links ? { links: success.links } : {}),
      ...(success.status === 204 || success.status === 302 || success.status === 304
        ? {}
        : {
            content: {
              [success.contentType ?? 'application/json']: { schema: success.schema ?? z.unknown() },
            },
          }),
    };
  }
  if (op.auth === 'forge-signature') responses[401] = { $ref: `#/components/responses/${UNSIGNED_WEBHOOK}` };
  for (const status of [...errors].sort()) responses[status] ??= problemResponse(status);
  const body: ZodRequestBody | undefined = op.body && {
    description: op.body.description,
    required: op.body.required ?? true,
    content: { 'application/json': { schema: op.body.schema } },
  };
  registry.registerPath({
    method: op.method,
    path: op.path,
    operationId: op.operationId,
    summary: op.summary,
    description: op.description,
    tags: op.tags,
    ...(op.deprecated ? { deprecated: true } : {}),
    security: auth
      ? [{ [BEARER_AUTH]: [] }]
      : op.auth === 'metrics-token'
        ? [{}, { [METRICS_TOKEN_AUTH]: [] }]
        : op.auth === 'forge-signature'
          ? [{ [FORGE_SIGNATURE_AUTH]: [] }]
          : [],
    request: {
      ...(op.params ? { params: op.params } : {}),
      ...(op.query ? { query: op.query } : {}),
      ...(auth || op.headers
        ? { headers: z.object({ ...op.headers?.shape, ...(auth ? { 'X-Warp-Team-Uid': activeTeamHeader } : {}) }) }
        : {}),
      ...(body ? { body } : {}),
    },
    responses,
  });
}

/** `expires` and `signature` of a signed URL (downloads, transcript links). */
export const signatureParameters = {
  expires: z
    .string()
    .regex(/^\d{1,12}$/)
    .openapi({ description: 'From the signed URL, unchanged (unix seconds).' }),
  signature: z
    .string()
    .regex(/^[A-Za-z0-9_-]{43}$/)
    .openapi({ description: 'From the signed URL, unchanged.' }),
};

/** The `Idempotency-Key` request header of creates and follow-ups. */
export const idempotencyHeaders = z.object({
  'Idempotency-Key': z
    .string()
    .regex(/^[\x20-\x7e]{0,255}$/)
    .optional()
    .openapi({
      description:
        'A retry with the same key and body within 24 hours returns the first response and changes nothing; the same key with another body is 409. Empty is the same as none.',
      example: 'build-4711',
    }),
});

/** `Location` of a created resource. */
export const locationHeader = {
  Location: { description: 'The path of the created resource.', required: true, schema: { type: 'string' } },
};
