import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from '../../core/schemas/zod';
import { registerOperation, SIGNED_LOCATION_HEADER, signatureParameters, timestamp } from './common';
import { externalReferenceQuerySchema } from '../../core/schemas/agent-schemas';
import type { toArtifactResponse, toPlanResponse, toPullRequestResponse } from '../../services/views/artifact-views';
import { pullRequestDataSchema } from './run-responses';
import type { Fits } from './fits';

/** `GET /agent/artifacts/{uid}` of a file (services/views/artifact-views.ts `toArtifactResponse`). */
const fileArtifactSchema = z
  .object({
    artifact_type: z.literal('FILE'),
    artifact_uid: z.uuid(),
    created_at: timestamp(),
    data: z.object({
      content_type: z.string(),
      download_url: z.url().openapi({ description: 'Signed; works without a key until `expires_at`.' }),
      expires_at: timestamp(),
      filename: z.string(),
      filepath: z.string(),
      size_bytes: z.number().int(),
      description: z.string().optional(),
      title: z.string().optional(),
    }),
  })
  .openapi('FileArtifact');

/** `GET /agent/artifacts/{uid}` of a plan version (`toPlanResponse`). */
const planArtifactSchema = z
  .object({
    artifact_type: z.literal('PLAN'),
    artifact_uid: z.uuid(),
    created_at: timestamp(),
    data: z.object({
      content: z.string().openapi({ description: "This version's markdown." }),
      content_type: z.literal('text/markdown'),
      document_uid: z.uuid().openapi({ description: "The run's plan document: the same for every version." }),
      notebook_uid: z.uuid().openapi({ description: 'The same as `document_uid` (no notebooks here).' }),
      title: z.string(),
      version: z.number().int().openapi({ description: '1 for the first plan of the run, then 2, 3…' }),
    }),
  })
  .openapi('PlanArtifact');

/**
 * `GET /agent/artifacts/{uid}` of a pull request (`toPullRequestResponse`): the clients define no
 * answer for one, so it is the list's item with its `artifact_uid`.
 */
const pullRequestArtifactSchema = z
  .object({
    artifact_type: z.literal('PULL_REQUEST'),
    artifact_uid: z.uuid(),
    created_at: timestamp(),
    data: pullRequestDataSchema,
  })
  .openapi('PullRequestArtifact');

const artifactSchema = z.union([fileArtifactSchema, planArtifactSchema, pullRequestArtifactSchema]).openapi('Artifact');

const downloadHeaders = {
  'Content-Disposition': {
    description: '`attachment`, with the file name.',
    required: true,
    schema: { type: 'string' },
  },
};

const signatureQuery = z.strictObject(signatureParameters);

export function registerArtifactOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/artifacts/{artifactUid}',
    operationId: 'getArtifact',
    summary: 'Get an artifact: a file with a signed download URL, a plan with its markdown, or a pull request',
    tags: ['Artifacts'],
    params: z.object({ artifactUid: z.uuid().openapi({ param: { description: 'The artifact uid.' } }) }),
    responses: [{ status: 200, description: 'The artifact.', schema: artifactSchema }],
    errors: [400, 404],
  });

  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/run-by-external-reference',
    operationId: 'getRunByExternalReference',
    summary: 'The run that reported an external reference',
    description:
      "The newest run of your team that reported the URL (the agent's `report_external_reference` tool), compared in canonical form: scheme and host in lowercase, no fragment, no trailing slash.",
    tags: ['Artifacts'],
    query: externalReferenceQuerySchema,
    responses: [{ status: 200, description: 'The run.', schema: z.object({ run_id: z.uuid() }) }],
    errors: [400, 404],
  });

  const redirect = (description: string) => ({ status: 302 as const, description, headers: SIGNED_LOCATION_HEADER });
  const uuidParam = (description: string) => z.uuid().openapi({ param: { description } });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/artifacts/{artifactUid}/download',
    operationId: 'downloadArtifactRedirect',
    summary: "Redirect to an artifact's signed download",
    tags: ['Artifacts'],
    params: z.object({ artifactUid: uuidParam('The artifact uid.') }),
    responses: [redirect('To the signed download of the file.')],
    errors: [400, 404],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/conversations/{conversationId}/screenshots/{screenshotUid}/download',
    operationId: 'downloadScreenshot',
    summary: "Redirect to a conversation's screenshot",
    description: "A screenshot is an image artifact (`image/*`) of one of the conversation's runs.",
    tags: ['Artifacts'],
    params: z.object({
      conversationId: uuidParam('The conversation id.'),
      screenshotUid: uuidParam("The image artifact's uid."),
    }),
    responses: [redirect('To the signed download of the image.')],
    errors: [400, 404],
  });
  for (const [path, operationId, what, param] of [
    ['/api/v1/agent/runs/{runId}/transcript', 'getRunTranscript', 'the run', 'runId'],
    [
      '/api/v1/agent/conversations/{conversationId}/transcript',
      'getConversationTranscript',
      'every run of the conversation, in order,',
      'conversationId',
    ],
  ] as const) {
    registerOperation(registry, {
      method: 'get',
      path,
      operationId,
      summary: `Redirect to the raw transcript of ${what.replace(/,$/, '')}`,
      description: `A signed, expiring download of the transcript of ${what} as JSON Lines: each entry as the event stream sends it (\`id\`, \`run_id\`, \`kind\`, \`turn\`, \`created_at\`, \`payload\`).`,
      tags: ['Runs'],
      params: z.object({ [param]: uuidParam(param === 'runId' ? 'The run id.' : 'The conversation id.') }),
      responses: [redirect('To the signed download of the transcript.')],
      errors: [400, 404],
    });
  }

  for (const [kind, what, param] of [
    ['transcripts', "a run's transcript", 'The run id.'],
    ['conversation-transcripts', "a conversation's transcript", 'The conversation id.'],
  ] as const) {
    registerOperation(registry, {
      method: 'get',
      path: `/downloads/${kind}/{id}`,
      operationId: kind === 'transcripts' ? 'downloadRunTranscript' : 'downloadConversationTranscript',
      summary: `Download ${what}`,
      description:
        'The signed URL is the capability: no key is needed. JSON Lines, one transcript entry per line, secrets masked.',
      tags: ['Runs'],
      auth: false,
      params: z.object({ id: z.string().openapi({ param: { description: param } }) }),
      query: signatureQuery,
      responses: [
        {
          status: 200,
          description: 'The transcript.',
          contentType: 'application/x-ndjson',
          schema: z.string(),
          headers: downloadHeaders,
        },
      ],
      errors: [400, 403, 404],
    });
  }

  for (const [kind, what, param] of [
    ['artifacts', 'an artifact', 'The artifact uid.'],
    ['handoff', 'a handoff attachment', 'The attachment id.'],
  ] as const) {
    registerOperation(registry, {
      method: 'get',
      path: `/downloads/${kind}/{id}`,
      operationId: kind === 'artifacts' ? 'downloadArtifact' : 'downloadHandoffAttachment',
      summary: `Download ${what}`,
      description:
        'The signed URL is the capability: no key is needed. Served as a download (`Content-Disposition: attachment`) that browsers never render.',
      tags: ['Artifacts'],
      auth: false,
      params: z.object({ id: z.string().openapi({ param: { description: param } }) }),
      query: signatureQuery,
      responses: [
        {
          status: 200,
          description: 'The file, with the MIME type it was stored with.',
          contentType: '*/*',
          schema: z.string().openapi({ format: 'binary' }),
          headers: downloadHeaders,
        },
      ],
      errors: [400, 403, 404],
    });
  }
}

/** What services/views/artifact-views.ts builds is what the document says an artifact is. */
export type ArtifactFits = Fits<typeof fileArtifactSchema, ReturnType<typeof toArtifactResponse>>;
export type PlanArtifactFits = Fits<typeof planArtifactSchema, ReturnType<typeof toPlanResponse>>;
export type PullRequestArtifactFits = Fits<typeof pullRequestArtifactSchema, ReturnType<typeof toPullRequestResponse>>;
