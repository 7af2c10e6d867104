import {
  isEnvironmentUid,
  isSessionId,
  isUuid,
  newEnvironmentUid,
  newOpaqueId,
  newSessionId,
  newUuidV7,
} from '../../core/ids';

describe('newUuidV7', () => {
  test('is a version 7, variant 1 UUID whose first 48 bits are the milliseconds given', () => {
    const now = Date.UTC(2025, 5, 1, 12, 0, 0, 123);
    const id = newUuidV7(now);
    expect(isUuid(id)).toBe(true);
    expect(id[14]).toBe('7');
    expect(['8', '9', 'a', 'b']).toContain(id[19]);
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(now);
  });

  test('ids sort by creation time, and two of the same millisecond differ', () => {
    const times = [0, 1, 999, Date.UTC(2000, 0, 1), Date.UTC(2025, 0, 1), 2 ** 48 - 1];
    const ids = times.map((t) => newUuidV7(t));
    expect([...ids].sort()).toEqual(ids);
    expect(newUuidV7(5)).not.toBe(newUuidV7(5));
  });
});

test('isUuid takes the lower-case canonical form only', () => {
  expect(isUuid('0190a6e2-7c3b-7def-8abc-0123456789ab')).toBe(true);
  for (const id of [
    '0190A6E2-7C3B-7DEF-8ABC-0123456789AB',
    '0190a6e27c3b7def8abc0123456789ab',
    '{0190a6e2-7c3b-7def-8abc-0123456789ab}',
    '0190a6e2-7c3b-7def-8abc-0123456789ab ',
    '0190a6e2-7c3b-7def-8abc-0123456789a',
    "0190a6e2-7c3b-7def-8abc-0123456789ab' OR 1=1",
  ]) {
    expect([id, isUuid(id)]).toEqual([id, false]);
  }
});

test('session ids are 32 URL-safe characters (192 bits), each new', () => {
  const ids = Array.from({ length: 50 }, () => newSessionId());
  for (const id of ids) expect([id, isSessionId(id)]).toEqual([id, true]);
  expect(new Set(ids).size).toBe(ids.length);
  expect(isSessionId('a'.repeat(31))).toBe(false);
  expect(isSessionId('a'.repeat(33))).toBe(false);
  expect(isSessionId(`${'a'.repeat(31)}+`)).toBe(false);
});

test('opaque ids are 22 URL-safe characters (128 bits)', () => {
  expect(newOpaqueId()).toMatch(/^[A-Za-z0-9_-]{22}$/);
  expect(newOpaqueId()).not.toBe(newOpaqueId());
});

test('environment uids are 22 alphanumerics, every character of the alphabet in use', () => {
  const uids = Array.from({ length: 400 }, () => newEnvironmentUid());
  for (const uid of uids) expect([uid, isEnvironmentUid(uid)]).toEqual([uid, true]);
  expect(new Set(uids).size).toBe(uids.length);
  // 8,800 characters: each of the 62 is expected about 140 times; none missing means none is excluded.
  expect(new Set(uids.join('')).size).toBe(62);
  expect(isEnvironmentUid('a'.repeat(21))).toBe(false);
  expect(isEnvironmentUid(`${'a'.repeat(21)}-`)).toBe(false);
});
