import { EntitySchema } from 'typeorm';

export type FollowupMode = 'normal' | 'plan' | 'orchestrate';

export interface Followup {
  id: string;
  runId: string;
  seq: number;
  message: string;
  mode: FollowupMode;
  creatorUid: string;
  createdAt: Date;
  deliveredAt: Date | null;
}

export const FollowupEntity = new EntitySchema<Followup>({
  name: 'Followup',
  tableName: 'followups',
  columns: {
    id: { type: 'uuid', primary: true },
    runId: { name: 'run_id', type: 'uuid' },
    seq: { type: 'integer' },
    message: { type: 'text' },
    mode: { type: 'text' },
    creatorUid: { name: 'creator_uid', type: 'text' },
    createdAt: { name: 'created_at', type: 'timestamptz', precision: 3 },
    deliveredAt: { name: 'delivered_at', type: 'timestamptz', precision: 3, nullable: true },
  },
});
