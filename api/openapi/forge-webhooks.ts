import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { FORGE_KINDS } from '../../core/git-forges';
import { z } from '../../core/schemas/zod';
import { registerOperation } from './common';

/** `POST /forge-webhooks/{forge}` (api/routes/forge-webhooks-routes.ts). */
const outcomeSchema = z
  .union([
    z.object({
      result: z.literal('recorded'),
      matched: z.number().int().openapi({ description: "Runs' pull requests that are this one." }),
      changed: z.number().int().openapi({ description: 'Of those, the ones whose status changed.' }),
    }),
    z.object({ result: z.literal('ignored'), reason: z.string() }),
  ])
  .openapi('ForgeWebhookOutcome');

export function registerForgeWebhookOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'post',
    path: '/api/v1/forge-webhooks/{forge}',
    operationId: 'receiveForgeWebhook',
    summary: "A forge's pull request webhook: keeps the PULL_REQUEST artifacts' status current",
    description:
      "For the forge, not for API clients: no API key, the forge signs the body with the secret FORGE_WEBHOOK_SECRETS holds for the repository's host (GitHub `X-Hub-Signature-256`, Gitea and Forgejo `X-Gitea-Signature`, GitLab `X-Gitlab-Token`). A pull request's (merge request's) event sets the status of every run's pull request that is this one and appends a `pull_request` event to those runs; other events, and pull requests no run delivered, change nothing (202). Counted per client address.",
    tags: ['Forge webhooks'],
    auth: 'forge-signature',
    params: z.object({
      forge: z.enum(FORGE_KINDS).openapi({ param: { description: 'The kind of forge that sends it.' } }),
    }),
    body: { schema: z.record(z.string(), z.unknown()), description: "The forge's event, as it sends it." },
    responses: [
      {
        status: 200,
        description: 'The status was recorded on the runs that delivered the pull request.',
        schema: outcomeSchema,
      },
      {
        status: 202,
        description: 'Nothing to record: another event, or a pull request no run delivered.',
        schema: outcomeSchema,
      },
    ],
    errors: [404, 429],
  });
}
