import { parseTeamsCommand } from '../../bin/teams-command';
import { UsageError } from '../../bin/usage-error';

test('delete takes one team, by id or name, with --yes and --cancel-live', () => {
  expect(parseTeamsCommand(['delete', 'acme'])).toEqual({
    name: 'delete',
    team: 'acme',
    yes: false,
    cancelLive: false,
  });
  expect(parseTeamsCommand(['delete', '--yes', '0190f0c2-0000-7000-8000-000000000000', '--cancel-live'])).toEqual({
    name: 'delete',
    team: '0190f0c2-0000-7000-8000-000000000000',
    yes: true,
    cancelLive: true,
  });
});

test.each([
  [[], 'Usage:'],
  [['remove', 'acme'], 'Usage:'],
  [['delete'], 'delete takes the team'],
  [['delete', '  '], 'delete takes the team'],
  [['delete', 'acme', 'globex'], 'got also globex'],
  [['delete', 'acme', '--force'], "Unknown option '--force'"],
  [['delete', 'acme', '--yes=no'], '--yes'],
])('%j is a usage error saying %j', (argv, says) => {
  expect(() => parseTeamsCommand(argv)).toThrow(UsageError);
  expect(() => parseTeamsCommand(argv)).toThrow(says);
});
