import { GIT_CREDENTIAL_RULE, parseGitCredential } from '../../core/git-credentials';
import { invalid, notFound } from '../../core/api-error';
import { newUuidV7 } from '../../core/ids';
import {
  inferSecretKind,
  MANAGED_SECRET_KINDS,
  MANAGED_SECRET_NAME,
  type ManagedSecretKind,
} from '../../core/managed-secrets';
import type { CreateManagedSecretRequest } from '../../core/schemas/managed-secret-schemas';
import { parseRegistryCredential, REGISTRY_CREDENTIAL_RULE } from '../../core/registry-credentials';
import { encryptSecret } from '../../core/secrets';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import { deleteManagedSecret, upsertManagedSecret } from '../../db/managed-secrets';
import { hasManagedSecret, type ManagedSecret } from '../../db/managed-secret-reads';
import type { ServiceDeps } from '../service-deps';
import { assertTeamHasRoom } from '../team-caps';

/**
 * A team's managed secrets: credentials runs use by name, stored encrypted, never shown again;
 * their kinds, and TEAM_MAX_SECRETS.
 */
export function createManagedSecretService({ config, dataSource, secretsKeyring }: ServiceDeps) {
  return {
    /** Stores a team's secret (encrypted), or replaces the value of the one of that name. */
    async store(
      principal: AuthenticatedPrincipal,
      body: CreateManagedSecretRequest,
    ): Promise<{ secret: ManagedSecret; created: boolean }> {
      const kind = kindOf(body);
      const { teamId } = principal;
      return dataSource.transaction(async (tx) => {
        if (!(await hasManagedSecret(tx, teamId, body.name))) {
          await assertTeamHasRoom(tx, 'managed_secrets', teamId, config.quotas.teamMaxSecrets);
        }
        return upsertManagedSecret(tx, {
          id: newUuidV7(),
          teamId,
          name: body.name,
          kind,
          description: body.description ?? null,
          encryptedValue: encryptSecret(body.value, secretsKeyring),
        });
      });
    },

    /** Deletes the team's secret of that name; 404 when there is none. */
    async delete(principal: AuthenticatedPrincipal, name: string): Promise<void> {
      if (!MANAGED_SECRET_NAME.test(name) || !(await deleteManagedSecret(dataSource.manager, principal.teamId, name))) {
        throw notFound(`No secret ${name}.`);
      }
    },
  };
}

/** The kind a secret is stored as: the one sent, else the one its value shows; checked against the value. */
function kindOf(body: CreateManagedSecretRequest): ManagedSecretKind {
  const kind: ManagedSecretKind | undefined = body.kind ?? inferSecretKind(body.value);
  if (!kind) {
    throw invalid(
      `Field \`kind\`: the value does not say what it is; send \`kind\`, one of ${MANAGED_SECRET_KINDS.join(', ')}.`,
    );
  }
  if (kind === 'registry_credentials' && !parseRegistryCredential(body.value)) {
    throw invalid(
      `Field \`value\`: a secret of kind registry_credentials is ${REGISTRY_CREDENTIAL_RULE}; the registry part is not one.`,
    );
  }
  if (kind === 'git_credentials' && !parseGitCredential(body.value)) {
    throw invalid(
      `Field \`value\`: a secret of kind git_credentials is ${GIT_CREDENTIAL_RULE}; this value is not one.`,
    );
  }
  return kind;
}

export type ManagedSecretService = ReturnType<typeof createManagedSecretService>;

/** A secret as every endpoint shows it: never its value. */
export function toManagedSecretItem(secret: ManagedSecret) {
  return {
    name: secret.name,
    kind: secret.kind as ManagedSecretKind,
    description: secret.description,
    created_at: secret.createdAt.toISOString(),
    updated_at: secret.updatedAt.toISOString(),
  };
}
