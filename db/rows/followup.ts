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
