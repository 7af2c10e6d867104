import { EntitySchema } from 'typeorm';

export interface IdempotencyRecord {
  principalUid: string;
  scope: string;
  key: string;
  requestHash: string;
  responseStatus: number | null;
  responseBody: unknown;
  responseHeaders: Record<string, string> | null;
  createdAt: Date;
}

export const IdempotencyRecordEntity = new EntitySchema<IdempotencyRecord>({
  name: 'IdempotencyRecord',
  tableName: 'idempotency_records',
  columns: {
    principalUid: { name: 'principal_uid', type: 'text', primary: true },
    scope: { type: 'text', primary: true },
    key: { type: 'text', primary: true },
    requestHash: { name: 'request_hash', type: 'text' },
    responseStatus: { name: 'response_status', type: 'integer', nullable: true },
    responseBody: { name: 'response_body', type: 'jsonb', nullable: true },
    responseHeaders: { name: 'response_headers', type: 'jsonb', nullable: true },
    createdAt: { name: 'created_at', type: 'timestamptz', precision: 3 },
  },
});
