import type { CreateRunRequest } from '../../core/schemas/run-schemas';
import type { ResolvedAgentConfig } from '../../core/run-types';
import { rejectUnsupported } from '../../core/unsupported-fields';

/** Why `mode: "orchestrate"` is refused, on create and on follow-ups. */
export const ORCHESTRATE_MODE_WHY =
  'an agent delegates work to other agents as the foreman of a factory: send the work to `POST /agent/factories/{uid}/runs` instead; use "normal" or "plan" here.';

/** Fields of a create request the official clients send that this service cannot honour. */
export function assertRunFieldsSupported(body: CreateRunRequest): void {
  const c = body.config ?? {};
  rejectUnsupported([
    {
      path: 'mode',
      value: body.mode,
      why: ORCHESTRATE_MODE_WHY,
      given: (v) => v === 'orchestrate',
    },
    {
      path: 'config.inference_providers',
      value: c.inference_providers,
      why: 'models come from the providers the operator configures.',
    },
    {
      path: 'config.credential_strategy',
      value: c.credential_strategy,
      why: "repositories are cloned with the environment's token.",
    },
    { path: 'config.memory_stores', value: c.memory_stores, why: 'there are no memory stores.' },
    { path: 'config.runner_id', value: c.runner_id, why: "runs execute on this service's workers." },
    {
      path: 'config.session_sharing',
      value: c.session_sharing,
      why: "a run's transcript is shared through its `session_link`, a signed link that needs no key until it expires (SESSION_LINK_TTL_SECONDS).",
    },
  ]);
}

const NOT_HONOURED = [
  'inference_providers',
  'credential_strategy',
  'memory_stores',
  'runner_id',
  'session_sharing',
] as const;

/**
 * The request's config without the recognised fields that mean nothing here (checked empty
 * above); `worker_host` stays when it names a worker ("warp", the hosted default, means any); a
 * harness sent stays, `oz` included, so that it wins over an agent's (see chosenHarness).
 */
export function honouredConfig(config: CreateRunRequest['config']) {
  if (!config) return undefined;
  const honoured: Record<string, unknown> = { ...config };
  for (const field of NOT_HONOURED) delete honoured[field];
  const harness = chosenHarness(config.harness);
  if (harness) honoured.harness = harness;
  else delete honoured.harness;
  const secrets = namedSecrets(config.harness_auth_secrets);
  if (secrets) honoured.harness_auth_secrets = secrets;
  else delete honoured.harness_auth_secrets;
  const host = config.worker_host?.trim();
  if (host && host !== 'warp') honoured.worker_host = host;
  else delete honoured.worker_host;
  return honoured as Omit<
    NonNullable<CreateRunRequest['config']>,
    (typeof NOT_HONOURED)[number] | 'worker_host' | 'harness' | 'harness_auth_secrets'
  > & {
    worker_host?: string;
    harness?: NonNullable<ResolvedAgentConfig['harness']>;
    harness_auth_secrets?: ResolvedAgentConfig['harness_auth_secrets'];
  };
}

type HarnessRequest = ResolvedAgentConfig['harness'] | null | undefined;

/**
 * The harness a request chose: nulls and empty strings left out, `{type: "oz"}` for this
 * service's own loop (named, or a harness without a type, which is the default); undefined when
 * none was sent (null or absent), so that an agent's default applies.
 */
export function chosenHarness(harness: HarnessRequest): NonNullable<ResolvedAgentConfig['harness']> | undefined {
  if (!harness) return undefined;
  return normalHarness(harness) ?? { type: 'oz' };
}

/**
 * A harness as a run (or an agent) stores it: nulls and empty strings left out; nothing at all
 * for none or for `oz` (this service's own loop, the default, whose model is `config.model_id`).
 */
export function normalHarness(harness: HarnessRequest) {
  if (!harness || !harness.type || harness.type === 'oz') return undefined;
  const kept = Object.fromEntries(Object.entries(harness).filter(([, v]) => v !== null && v !== undefined && v !== ''));
  return Object.keys(kept).length ? (kept as NonNullable<ResolvedAgentConfig['harness']>) : undefined;
}

/** `harness_auth_secrets` as stored: the fields that name a secret; undefined when none does. */
export function namedSecrets(
  secrets: Partial<Record<string, string | null | undefined>> | null | undefined,
): ResolvedAgentConfig['harness_auth_secrets'] {
  const named = Object.fromEntries(Object.entries(secrets ?? {}).filter(([, name]) => name));
  return Object.keys(named).length ? (named as ResolvedAgentConfig['harness_auth_secrets']) : undefined;
}
