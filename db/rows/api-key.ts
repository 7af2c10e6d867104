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
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  replacedBy: string | null;
}
