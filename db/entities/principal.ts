import { EntitySchema } from 'typeorm';

export type PrincipalType = 'user' | 'service_account';

/** Who acts through a key: a user (personal keys) or an agent identity (agent keys). */
export interface Principal {
  uid: string;
  teamId: string;
  type: PrincipalType;
  displayName: string;
  createdAt: Date;
}

export const PrincipalEntity = new EntitySchema<Principal>({
  name: 'Principal',
  tableName: 'principals',
  columns: {
    uid: { type: 'text', primary: true },
    teamId: { name: 'team_id', type: 'uuid' },
    type: { type: 'text' },
    displayName: { name: 'display_name', type: 'text' },
    createdAt: { name: 'created_at', type: 'timestamptz', precision: 3, createDate: true },
  },
});
