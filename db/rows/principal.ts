export type PrincipalType = 'user' | 'service_account';

/** Who acts through a key: a user (personal keys) or an agent identity (agent keys). */
export interface Principal {
  uid: string;
  teamId: string;
  type: PrincipalType;
  displayName: string;
  createdAt: Date;
}
