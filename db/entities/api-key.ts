import { EntitySchema } from 'typeorm';

export type ApiKeyKind = 'personal' | 'agent';

export const KEY_ROLES = ['member', 'admin'] as const;
export type KeyRole = (typeof KEY_ROLES)[number];

export interface ApiKey {
  id: string;
  principalUid: string;
  teamId: string;
  kind: ApiKeyKind;
  name: string;
  prefix: string;
  secretHash: string;
  role: KeyRole;
  createdAt: Date;
  revokedAt: Date | null;
}

export const ApiKeyEntity = new EntitySchema<ApiKey>({
  name: 'ApiKey',
  tableName: 'api_keys',
  columns: {
    id: { type: 'uuid', primary: true },
    principalUid: { name: 'principal_uid', type: 'text' },
    teamId: { name: 'team_id', type: 'uuid' },
    kind: { type: 'text' },
    name: { type: 'text' },
    prefix: { type: 'text' },
    secretHash: { name: 'secret_hash', type: 'text', unique: true },
    role: { type: 'text', default: 'member' },
    createdAt: { name: 'created_at', type: 'timestamptz', precision: 3, createDate: true },
    revokedAt: { name: 'revoked_at', type: 'timestamptz', precision: 3, nullable: true },
  },
});
