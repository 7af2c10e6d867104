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
