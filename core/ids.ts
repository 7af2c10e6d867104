import { randomBytes } from 'node:crypto';

/** A UUIDv7: 48 bits of milliseconds, then 74 random bits; sorts by creation time. */
export function newUuidV7(now: number = Date.now()): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = 0x70 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}

/** A session id is a capability for reading the transcript: 192 random bits, URL-safe. */
export function newSessionId(): string {
  return randomBytes(24).toString('base64url');
}

export function isSessionId(value: string): boolean {
  return /^[A-Za-z0-9_-]{32}$/.test(value);
}

export function newOpaqueId(): string {
  return randomBytes(16).toString('base64url');
}

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** An environment uid: 22 characters of [A-Za-z0-9], about 131 random bits. */
export function newEnvironmentUid(): string {
  let out = '';
  while (out.length < 22) {
    for (const byte of randomBytes(32)) {
      // Rejection sampling keeps every character equally likely.
      if (byte < 248 && out.length < 22) out += BASE62[byte % 62];
    }
  }
  return out;
}

export function isEnvironmentUid(value: string): boolean {
  return /^[A-Za-z0-9]{22}$/.test(value);
}
