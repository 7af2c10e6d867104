import { OpenApiGeneratorV31, OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { Config } from '../../core/config';
import { registerAgentOperations } from './agent';
import { registerArtifactOperations } from './artifacts';
import { registerCheckpointOperations } from './checkpoints';
import { BEARER_AUTH, FORGE_SIGNATURE_AUTH, METRICS_TOKEN_AUTH, registerErrorComponents } from './common';
import { registerEnvironmentOperations } from './environments';
import { registerLiveOperations } from './live';
import { registerFactoryOperations, registerFactoryResourceOperations } from './factories';
import { registerIdentityOperations } from './identities';
import { forbidNulInRequests } from './no-nul';
import { NOTHING_JSON_SCHEMA, NOTHING_SCHEMA_NAME } from '../../core/schemas/not-available';
import { registerPlatformOperations } from './platform';
import { registerTimelineOperations } from './timeline';
import { registerFactoryTaskOperations } from './factory-tasks';
import { registerFactoryFileOperations } from './factory-files';
import { registerForgeWebhookOperations } from './forge-webhooks';
import { registerTaskViewOperations } from './task-view';
import { registerRunOperations } from './runs';
import { registerScheduleOperations } from './schedules';
import { registerSecretOperations } from './secrets';
import { registerAuditOperations } from './audit';
import { registerServiceOperations } from './service';
import { registerConsoleOperations } from './console';

export type OpenApiDocument = ReturnType<OpenApiGeneratorV31['generateDocument']>;

const TAGS = [
  { name: 'Runs', description: 'Create, list, inspect, steer and cancel runs.' },
  { name: 'Agent identities', description: "A team's named agents." },
  { name: 'Environments', description: 'Reusable workspace recipes: repositories and setup commands.' },
  { name: 'Factories', description: 'Teams of agents led by a foreman.' },
  { name: 'Schedules', description: 'Runs on a cron schedule.' },
  { name: 'Artifacts', description: 'Files runs produced, and their signed downloads.' },
  { name: 'Skills', description: "Skills found in the team's environments." },
  { name: 'Redirects', description: 'Session and conversation lookups the official clients make without a key.' },
  { name: 'Webhooks', description: 'Signed notifications of run state changes, delivered durably.' },
  {
    name: 'Forge webhooks',
    description: "Forges' signed pull request events, which keep PULL_REQUEST artifacts current.",
  },
  { name: 'Secrets', description: "A team's credentials for harnesses, stored encrypted and never shown." },
  { name: 'Audit', description: 'Who changed what, when and from where, in a hash chain per team.' },
  { name: 'Service', description: 'Health, the transcript page, the error reference and this document.' },
  { name: 'Console', description: 'The web console: pages for people, over this API.' },
];

/** Every operation of the service; each module registers its operations next to their response schemas. */
function registry(): OpenAPIRegistry {
  const registry = new OpenAPIRegistry();
  registerErrorComponents(registry);
  registry.registerComponent('schemas', NOTHING_SCHEMA_NAME, NOTHING_JSON_SCHEMA as never);
  registry.registerComponent('securitySchemes', BEARER_AUTH, {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key (`ark_…`) from `npm run keys -- create` or the first `npm start`.',
  });
  registry.registerComponent('securitySchemes', METRICS_TOKEN_AUTH, {
    type: 'http',
    scheme: 'bearer',
    description:
      "The operator's `METRICS_BEARER_TOKEN` (not an API key); `/metrics` is open without it only on a service bound to loopback.",
  });
  registry.registerComponent('securitySchemes', FORGE_SIGNATURE_AUTH, {
    type: 'apiKey',
    in: 'header',
    name: 'X-Hub-Signature-256',
    description:
      "A forge's signature of the raw body with the secret FORGE_WEBHOOK_SECRETS holds for the repository's host: GitHub's `X-Hub-Signature-256` (`sha256=<hex HMAC-SHA256>`), Gitea's and Forgejo's `X-Gitea-Signature` (hex HMAC-SHA256), GitLab's `X-Gitlab-Token` (the secret itself).",
  });
  registerRunOperations(registry);
  registerCheckpointOperations(registry);
  registerAgentOperations(registry);
  registerIdentityOperations(registry);
  registerEnvironmentOperations(registry);
  registerFactoryOperations(registry);
  registerFactoryResourceOperations(registry);
  registerFactoryTaskOperations(registry);
  registerFactoryFileOperations(registry);
  registerForgeWebhookOperations(registry);
  registerTaskViewOperations(registry);
  registerScheduleOperations(registry);
  registerArtifactOperations(registry);
  registerServiceOperations(registry);
  registerConsoleOperations(registry);
  registerLiveOperations(registry);
  registerSecretOperations(registry);
  registerAuditOperations(registry);
  registerPlatformOperations(registry);
  registerTimelineOperations(registry);
  return registry;
}

/** The operator's ceilings on what a run may ask for (core/config.ts), which the document states. */
export interface OpenApiLimits {
  maxSteps: number;
  maxTokens: number;
  maxIdleTimeoutMinutes: number;
}

/** The limits of a service configured from `config`. */
export function openApiLimits(config: Config): OpenApiLimits {
  return {
    maxSteps: config.agent.maxSteps,
    maxTokens: config.agent.maxTokens,
    maxIdleTimeoutMinutes: config.maxIdleTimeoutMinutes,
  };
}

const cache = new Map<string, OpenApiDocument>();

/**
 * The OpenAPI 3.1 document of this service, generated from the zod schemas that validate
 * requests, with the operator's ceilings (AGENT_MAX_STEPS, ...) as the maxima of a run's
 * `config`; built once per set of limits.
 */
export function openApiDocument(limits: OpenApiLimits): OpenApiDocument {
  const key = JSON.stringify(limits);
  let document = cache.get(key);
  if (!document) {
    document = new OpenApiGeneratorV31(registry().definitions, { sortComponents: 'alphabetically' }).generateDocument({
      openapi: '3.1.0',
      info: {
        title: 'Agent runs service',
        version: '1',
        description:
          'Creates, monitors, steers (follow-ups), cancels and inspects coding-agent runs. Errors are RFC 9457 problem documents (`application/problem+json`); see `/errors`.',
        license: { name: 'UNLICENSED', identifier: 'UNLICENSED' },
      },
      servers: [{ url: '/', description: 'This service' }],
      tags: TAGS,
      security: [{ [BEARER_AUTH]: [] }],
    });
    applyLimits(document, limits);
    forbidNulInRequests(document as unknown as Record<string, unknown>);
    cache.set(key, document);
  }
  return document;
}

/** The schemas allow what the service could ever allow; the operator's configuration may allow less. */
function applyLimits(document: OpenApiDocument, limits: OpenApiLimits): void {
  const config = document.components?.schemas?.AgentConfig as { properties?: Record<string, { maximum?: number }> };
  const set = (field: string, ceiling: number) => {
    const property = config?.properties?.[field];
    if (!property) throw new Error(`AgentConfig.${field} is missing from the OpenAPI document`);
    property.maximum = Math.min(property.maximum ?? ceiling, ceiling);
  };
  set('max_steps', limits.maxSteps);
  set('max_tokens', limits.maxTokens);
  set('idle_timeout_minutes', limits.maxIdleTimeoutMinutes);
}
