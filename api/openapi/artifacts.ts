import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from '../../core/schemas/zod';
import { registerOperation, timestamp } from './common';
import type { toArtifactResponse } from '../../services/views/artifact-views';
import type { Fits } from './fits';

/** `GET /agent/artifacts/{uid}` (api/artifact-views.ts `toArtifactResponse`). */
const artifactSchema = z
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
  .openapi('Artifact');

const downloadHeaders = {
  'Content-Disposition': {
    description: '`attachment`, with the file name.',
    required: true,
    schema: { type: 'string' },
  },
};

const signatureQuery = z.strictObject({
  expires: z.string().openapi({ description: 'From the signed URL, unchanged.' }),
  signature: z.string().openapi({ description: 'From the signed URL, unchanged.' }),
});

export function registerArtifactOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'get',
    path: '/api/v1/agent/artifacts/{artifactUid}',
    operationId: 'getArtifact',
    summary: 'Get an artifact, with a signed download URL',
    tags: ['Artifacts'],
    params: z.object({ artifactUid: z.uuid().openapi({ param: { description: 'The artifact uid.' } }) }),
    responses: [{ status: 200, description: 'The artifact.', schema: artifactSchema }],
    errors: [400, 404],
  });

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

/** What api/artifact-views.ts builds is what the document says an artifact is. */
export type ArtifactFits = Fits<typeof artifactSchema, ReturnType<typeof toArtifactResponse>>;
