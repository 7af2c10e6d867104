import type { DataSource, EntityManager } from 'typeorm';
import type { Config } from '../../core/config';
import {
  ensureTeam,
  ensureUser,
  insertApiKey,
  recordKeysLastUsed,
  revokeApiKey,
  setApiKeyRole,
  type CreatedKey,
  type KeyUse,
} from '../../db/api-keys';
import { findAgentKeyHolder, type KeyHolder } from '../../db/api-key-reads';
import type { ApiKeyKind, KeyRole } from '../../db/rows/api-key';
import { ensureNamedAgentIdentity } from '../identities/agent-identity-service';
import { KeyRequestError, UnknownAgentError } from './key-errors';
import { rotateApiKey, type RotatedKey, type RotationOptions } from './key-rotation';

/** What a new key is for: a user or an agent named within a team (made when first named), or an agent by uid. */
export type ApiKeyRequest = ({ kind: ApiKeyKind; name: string; team: string } | { kind: 'agent'; agentUid: string }) & {
  role?: KeyRole;
  /** The key stops working this long after it is made; absent: never. */
  expiresInSeconds?: number;
};

/**
 * API keys, which an operator manages (`npm run keys`, the first start): a new key's team and
 * user are made when first named, and an agent named by name is made as the API makes agents
 * (TEAM_MAX_AGENTS). The raw key is in the answer of `create` only.
 */
export function createApiKeyService({
  config,
  dataSource,
}: {
  config: Pick<Config, 'quotas'>;
  dataSource: DataSource;
}) {
  const agentHolder = async (tx: EntityManager, teamId: string, name: string): Promise<KeyHolder> => {
    const agent = await ensureNamedAgentIdentity(tx, config, teamId, name);
    return { uid: agent.uid, teamId, name: agent.name };
  };
  return {
    async create(request: ApiKeyRequest): Promise<CreatedKey> {
      const role = request.role ?? 'member';
      const expiresIn = request.expiresInSeconds ?? null;
      if (expiresIn !== null && expiresIn <= 0) throw new KeyRequestError('A key must expire later than now.');
      return dataSource.transaction(async (tx) => {
        let holder: KeyHolder;
        if ('agentUid' in request) {
          const agent = await findAgentKeyHolder(tx, request.agentUid);
          if (!agent) throw new UnknownAgentError(`No agent identity ${request.agentUid}.`);
          holder = agent;
        } else {
          const teamId = await ensureTeam(tx, request.team);
          holder =
            request.kind === 'personal'
              ? await ensureUser(tx, teamId, request.name)
              : await agentHolder(tx, teamId, request.name);
        }
        return insertApiKey(tx, holder, request.kind, role, expiresIn);
      });
    },

    /** Replaces an active key with a new one of its holder, kind and role (rotateApiKey). */
    rotate: (idOrPrefix: string, options: RotationOptions): Promise<RotatedKey> =>
      dataSource.transaction((tx) => rotateApiKey(tx, idOrPrefix, options)),

    /** Gives an active key (by id or public prefix) a role; false when no active key matched. */
    setRole: (idOrPrefix: string, role: KeyRole): Promise<boolean> => setApiKeyRole(dataSource, idOrPrefix, role),

    /** Revokes a key by id or public prefix; false when no active key matched. */
    revoke: (idOrPrefix: string): Promise<boolean> => revokeApiKey(dataSource, idOrPrefix),
  };
}

/** Writes keys' last uses for a KeyUseRecorder (services/keys/key-use-recorder.ts). */
export function recordKeyUses(dataSource: DataSource): (uses: KeyUse[], minGapMs: number) => Promise<void> {
  return (uses, minGapMs) => recordKeysLastUsed(dataSource, uses, minGapMs);
}
