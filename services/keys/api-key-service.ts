import type { DataSource, EntityManager } from 'typeorm';
import type { AuditActor } from '../../core/audit/audit-event';
import type { AuditLog } from '../audit/audit-log';
import type { Config } from '../../core/config';
import {
  ensureTeam,
  ensureUser,
  insertApiKey,
  recordKeysLastUsed,
  revokeApiKey,
  setApiKeyRole,
  type ChangedKey,
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

/** Who changes keys (an operator at `npm run keys`, the first start), and where that is recorded. */
export interface KeyAuditing {
  log: AuditLog;
  actor: AuditActor;
}

/**
 * API keys, which an operator manages (`npm run keys`, the first start): a new key's team and
 * user are made when first named, and an agent named by name is made as the API makes agents
 * (TEAM_MAX_AGENTS). The raw key is in the answer of `create` only. Every change is recorded in
 * the audit log when `audit` is given (`key.create`, `key.rotate`, `key.role_change`, `key.revoke`).
 */
export function createApiKeyService({
  config,
  dataSource,
  audit,
}: {
  config: Pick<Config, 'quotas'>;
  dataSource: DataSource;
  audit?: KeyAuditing;
}) {
  const record = async (
    action: string,
    key: { id: string; teamId: string },
    details: Record<string, string | null>,
  ): Promise<void> => {
    await audit?.log.record({
      teamId: key.teamId,
      action,
      outcome: 'success',
      actor: audit.actor,
      resource: { type: 'api_key', id: key.id },
      details,
    });
  };
  const agentHolder = async (tx: EntityManager, teamId: string, name: string): Promise<KeyHolder> => {
    const agent = await ensureNamedAgentIdentity(tx, config, teamId, name);
    return { uid: agent.uid, teamId, name: agent.name };
  };
  return {
    async create(request: ApiKeyRequest): Promise<CreatedKey> {
      const role = request.role ?? 'member';
      const expiresIn = request.expiresInSeconds ?? null;
      if (expiresIn !== null && expiresIn <= 0) throw new KeyRequestError('A key must expire later than now.');
      const created = await dataSource.transaction(async (tx) => {
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
      await record('key.create', created, keyDetails(created, request.kind));
      return created;
    },

    /** Replaces an active key with a new one of its holder, kind and role (rotateApiKey). */
    async rotate(idOrPrefix: string, options: RotationOptions): Promise<RotatedKey> {
      const rotated = await dataSource.transaction((tx) => rotateApiKey(tx, idOrPrefix, options));
      await record('key.rotate', rotated.created, {
        ...keyDetails(rotated.created),
        replaces: rotated.old.id,
        old_key_until: (rotated.old.revokedAt ?? rotated.old.expiresAt)?.toISOString() ?? null,
      });
      return rotated;
    },

    /** Gives an active key (by id or public prefix) a role; null when no active key matched. */
    async setRole(idOrPrefix: string, role: KeyRole): Promise<ChangedKey | null> {
      const changed = await setApiKeyRole(dataSource, idOrPrefix, role);
      if (changed)
        await record('key.role_change', changed, { prefix: changed.prefix, from: changed.previousRole, to: role });
      return changed;
    },

    /** Revokes a key by id or public prefix; null when no active key matched. */
    async revoke(idOrPrefix: string): Promise<ChangedKey | null> {
      const revoked = await revokeApiKey(dataSource, idOrPrefix);
      if (revoked) await record('key.revoke', revoked, { prefix: revoked.prefix });
      return revoked;
    },
  };
}

/** What an audit event says of a new key: never the key itself. */
function keyDetails(key: CreatedKey, kind?: string): Record<string, string | null> {
  return {
    prefix: key.prefix,
    role: key.role,
    holder: key.principalUid,
    expires_at: key.expiresAt?.toISOString() ?? null,
    ...(kind ? { kind } : {}),
  };
}

/** Writes keys' last uses for a KeyUseRecorder (services/keys/key-use-recorder.ts). */
export function recordKeyUses(dataSource: DataSource): (uses: KeyUse[], minGapMs: number) => Promise<void> {
  return (uses, minGapMs) => recordKeysLastUsed(dataSource, uses, minGapMs);
}
