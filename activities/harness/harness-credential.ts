import type { Config } from '../../core/config';
import { CLI_HARNESSES, type CliHarnessType } from '../../core/harnesses';
import { decryptSecret } from '../../core/secrets';
import type { ResolvedAgentConfig } from '../../core/run-types';
import { findManagedSecret } from '../../db/managed-secret-reads';
import { HARNESS_SECRET_KINDS } from '../../core/managed-secrets';
import type { EntityManager } from 'typeorm';
import type { ProviderCredential } from './gateway-routes';
import type { SecretsKeyring } from '../../core/secrets-keyring';

/** What the gateway forwards a harness's calls with, and whose it is (the team's secret or the platform's key). */
export interface HarnessCredential {
  credential: ProviderCredential;
  baseUrl: string;
  /** The team's secret by name, when it is one: a provider's 401 is then the caller's to fix. */
  secretName?: string;
}

/** Why a harness run cannot get a credential: the message says what to set. */
export class HarnessCredentialError extends Error {
  override name = 'HarnessCredentialError';
}

const PLATFORM_KEYS = { anthropic: 'ANTHROPIC_API_KEY', openai: 'OPENAI_API_KEY', gemini: 'GEMINI_API_KEY' } as const;

/**
 * The credential of a harness run, looked up for each invocation (a replaced secret applies from
 * the next one): the team's managed secret its `harness_auth_secrets` names, else the key the
 * operator configured for the harness's provider.
 */
export async function harnessCredential(
  manager: EntityManager,
  config: Config,
  secretsKeyring: SecretsKeyring,
  run: { team_id: string; config: ResolvedAgentConfig },
  type: CliHarnessType,
): Promise<HarnessCredential> {
  const spec = CLI_HARNESSES[type];
  const provider = config.models[spec.provider];
  const name = spec.secretField ? run.config.harness_auth_secrets?.[spec.secretField] : undefined;
  if (name) {
    const secret = await findManagedSecret(manager, run.team_id, name);
    if (!secret) {
      throw new HarnessCredentialError(
        `The secret ${JSON.stringify(name)} that config.harness_auth_secrets.${spec.secretField} names is no longer in your team; store it again (POST /api/v1/agent/secrets) and send a follow-up.`,
      );
    }
    // Checked when the run was made, and again now: the secret may have been replaced since.
    if (!(HARNESS_SECRET_KINDS[type] as readonly string[]).includes(secret.kind)) {
      throw new HarnessCredentialError(
        `The secret ${JSON.stringify(name)} that config.harness_auth_secrets.${spec.secretField} names is now of kind ${secret.kind}; ${spec.title} takes ${HARNESS_SECRET_KINDS[type].join(' or ')}.`,
      );
    }
    const value = decryptSecret(secret.encryptedValue, secretsKeyring);
    return {
      credential: { kind: secret.kind === 'claude_oauth_token' ? 'oauth_token' : 'api_key', value },
      baseUrl: provider.baseUrl,
      secretName: name,
    };
  }
  if (!provider.apiKey) {
    const secretHint = spec.secretField
      ? ` or name a secret of your team in config.harness_auth_secrets.${spec.secretField}`
      : '';
    throw new HarnessCredentialError(
      `${spec.title} runs need a key for ${spec.provider}: the operator sets ${PLATFORM_KEYS[spec.provider]} on the workers${secretHint}.`,
    );
  }
  return { credential: { kind: 'api_key', value: provider.apiKey }, baseUrl: provider.baseUrl };
}
