import { parseCommand } from '../../bin/keys-command';
import { UsageError } from '../../bin/usage-error';

/** `npm run keys` command lines, parsed as bin/keys.ts does before it opens the database. */

test('durations become seconds; rotate without --grace leaves the default to the service', () => {
  expect(
    parseCommand(['create', '--kind', 'agent', '--name', 'ci', '--team', 'platform', '--expires-in', '90d']),
  ).toEqual({
    name: 'create',
    request: { kind: 'agent', name: 'ci', team: 'platform', role: undefined, expiresInSeconds: 7_776_000 },
    who: '"ci" in team "platform"',
  });
  expect(parseCommand(['create', '--kind', 'agent', '--agent', 'sa_x', '--expires-in', '2s'])).toMatchObject({
    request: { kind: 'agent', agentUid: 'sa_x', expiresInSeconds: 2 },
  });
  expect(parseCommand(['rotate', 'ark_abc'])).toEqual({ name: 'rotate', key: 'ark_abc', options: {} });
  expect(parseCommand(['rotate', 'ark_abc', '--grace', '0'])).toEqual({
    name: 'rotate',
    key: 'ark_abc',
    options: { graceSeconds: 0 },
  });
  expect(parseCommand(['rotate', 'ark_abc', '--grace=12h', '--expires-in', '30d'])).toEqual({
    name: 'rotate',
    key: 'ark_abc',
    options: { graceSeconds: 43_200, expiresInSeconds: 2_592_000 },
  });
});

const create = ['create', '--kind', 'personal', '--name', 'N', '--team', 'T'];
const refused: [string, string[], string][] = [
  ['--expires-in without a unit', [...create, '--expires-in', '10'], '--expires-in must be a whole number and a unit'],
  ['a fractional --expires-in', [...create, '--expires-in', '1.5h'], 'got "1.5h"'],
  ['a negative --expires-in', [...create, '--expires-in=-1d'], 'got "-1d"'],
  ['--expires-in in words', [...create, '--expires-in', '2 days'], 'got "2 days"'],
  ['--expires-in 0', [...create, '--expires-in', '0'], '--expires-in must be longer than 0'],
  ['--expires-in past ten years', [...create, '--expires-in', '3651d'], '--expires-in may be at most 3650d'],
  ['--expires-in without its value', [...create, '--expires-in'], "Option '--expires-in <value>' argument missing"],
  ['--grace on create', [...create, '--grace', '1h'], 'create takes no --grace'],
  ['a fractional --grace', ['rotate', 'k', '--grace', '1.5h'], '--grace must be a whole number and a unit'],
  ['a negative --grace', ['rotate', 'k', '--grace=-1s'], 'got "-1s"'],
  ['--grace without its value', ['rotate', 'k', '--grace'], "Option '--grace <value>' argument missing"],
  ['rotate with --expires-in 0', ['rotate', 'k', '--expires-in', '0s'], '--expires-in must be longer than 0'],
  ['rotate without a key', ['rotate'], 'rotate takes one key id or prefix'],
  ['rotate with two keys', ['rotate', 'a', 'b'], 'rotate takes one key id or prefix'],
  ['rotate with --role', ['rotate', 'k', '--role', 'admin'], 'rotate takes no --role'],
  ['list with --grace', ['list', '--grace', '1h'], 'list takes no --grace'],
  ['revoke with --expires-in', ['revoke', 'k', '--expires-in', '1d'], 'revoke takes no --expires-in'],
];

test.each(refused)('%s is a usage error saying what to write', (_label, argv, message) => {
  let error: unknown;
  try {
    parseCommand(argv);
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(UsageError);
  expect((error as Error).message).toContain(message);
  expect((error as Error).message).toContain('Usage:');
});
