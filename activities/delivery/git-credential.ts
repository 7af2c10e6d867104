import type { EntityManager } from 'typeorm';
import type { Config } from '../../core/config';
import { parseGitCredential } from '../../core/git-credentials';
import { decryptSecret } from '../../core/secrets';
import type { SecretsKeyring } from '../../core/secrets-keyring';
import { findManagedSecret, listManagedSecretsOfKind } from '../../db/managed-secret-reads';
import { DeliveryFailure } from './delivery-failures';

/**
 * The credential that pushes to `host` and opens its pull requests: the team's `git_credentials`
 * secret named by the settings, else its one for the host, else GIT_TOKEN where the operator
 * allows it to push. Read by the worker, outside the sandbox, and used only there.
 */
export async function pushCredential(
  manager: EntityManager,
  { config, secretsKeyring }: { config: Config; secretsKeyring: SecretsKeyring },
  teamId: string,
  host: string,
  secretName: string | undefined,
): Promise<{ username: string; token: string }> {
  if (secretName) {
    const secret = await findManagedSecret(manager, teamId, secretName);
    const value =
      secret?.kind === 'git_credentials'
        ? parseGitCredential(decryptSecret(secret.encryptedValue, secretsKeyring))
        : undefined;
    if (!value) {
      throw new DeliveryFailure(
        'pull_request_no_credential',
        `The team has no git_credentials secret ${secretName} (config.delivery.pull_request.credential_secret_name): store it with POST /agent/secrets, value username:token@${host}, then send a follow-up.`,
      );
    }
    if (value.host !== host) {
      throw new DeliveryFailure(
        'pull_request_no_credential',
        `The git_credentials secret ${secretName} is for ${value.host}, not ${host}: the token goes only to its own host. Store one for ${host}, then send a follow-up.`,
      );
    }
    return value;
  }
  for (const secret of await listManagedSecretsOfKind(manager, teamId, 'git_credentials')) {
    const value = parseGitCredential(decryptSecret(secret.encryptedValue, secretsKeyring));
    if (value?.host === host) return value;
  }
  const { gitToken, gitTokenForPush } = config.workspace;
  if (gitToken && gitTokenForPush) return { username: 'x-access-token', token: gitToken };
  throw new DeliveryFailure(
    'pull_request_no_credential',
    `No credential to push to ${host}: store a managed secret of kind git_credentials (POST /agent/secrets, value username:token@${host}), or an operator sets GIT_TOKEN_FOR_PUSH=true to push with GIT_TOKEN; then send a follow-up.`,
  );
}
