import type { EntityManager } from 'typeorm';
import { invalid } from '../../core/api-error';
import type { Config } from '../../core/config';
import { newUuidV7 } from '../../core/ids';
import { inferSecretKind, MANAGED_SECRET_KINDS, type ManagedSecretKind } from '../../core/managed-secrets';
import type { CreateManagedSecretRequest } from '../../core/schemas/managed-secret-schemas';
import { parseRegistryCredential, REGISTRY_CREDENTIAL_RULE } from '../../core/registry-credentials';
import { encryptSecret } from '../../core/secrets';
import { hasManagedSecret, upsertManagedSecret, type ManagedSecret } from '../../db/managed-secrets';
import { assertTeamHasRoom } from '../team-caps';

/** Stores a team's secret (encrypted), or replaces the value of the one of that name. */
export async function storeManagedSecret(
  tx: EntityManager,
  { config, secretsKey, teamId }: { config: Config; secretsKey: Buffer; teamId: string },
  body: CreateManagedSecretRequest,
): Promise<{ secret: ManagedSecret; created: boolean }> {
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
  if (!(await hasManagedSecret(tx, teamId, body.name))) {
    await assertTeamHasRoom(tx, 'managed_secrets', teamId, config.quotas.teamMaxSecrets);
  }
  return upsertManagedSecret(tx, {
    id: newUuidV7(),
    teamId,
    name: body.name,
    kind,
    description: body.description ?? null,
    encryptedValue: encryptSecret(body.value, secretsKey),
  });
}

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
