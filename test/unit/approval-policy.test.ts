import { approvalTimeoutMinutes, gateOf, mergeApprovalPolicies } from '../../core/approval-policy';

const command = (line: string) => ({ name: 'run_command', arguments: { command: line } });

test('a command glob matches the whole command line, across slashes, spaces and newlines', () => {
  const policy = { commands: ['git push*', '*rm -rf*'] };
  expect(gateOf(policy, command('git push origin feature/x'))).toBe('git push*');
  expect(gateOf(policy, command('cd /tmp && rm -rf build'))).toBe('*rm -rf*');
  expect(gateOf(policy, command('echo hi\nrm -rf /'))).toBe('*rm -rf*');
  // The whole line, not a part of it: a glob without `*` around it anchors both ends.
  expect(gateOf(policy, command('echo git push'))).toBeUndefined();
  // A guard rail only: the same effect written otherwise is not matched.
  expect(gateOf(policy, command('git  push'))).toBeUndefined();
  // Command globs are for run_command's command line only.
  expect(gateOf(policy, { name: 'write_file', arguments: { command: 'git push' } })).toBeUndefined();
});

test('a tool glob matches the name of any call', () => {
  const policy = { tools: ['mcp__deploy__*', 'write_file'] };
  expect(gateOf(policy, { name: 'mcp__deploy__prod', arguments: {} })).toBe('mcp__deploy__*');
  expect(gateOf(policy, { name: 'write_file', arguments: {} })).toBe('write_file');
  expect(gateOf(policy, { name: 'read_file', arguments: {} })).toBeUndefined();
  expect(gateOf(undefined, { name: 'write_file', arguments: {} })).toBeUndefined();
});

test('policies merge stricter-wins: every glob, the shortest timeout', () => {
  expect(
    mergeApprovalPolicies(
      { commands: ['git push*'], timeout_minutes: 600 },
      { commands: ['git push*', 'kubectl *'], tools: ['dispatch_agent'] },
      null,
      { timeout_minutes: 30 },
    ),
  ).toEqual({ commands: ['git push*', 'kubectl *'], tools: ['dispatch_agent'], timeout_minutes: 30 });
  expect(mergeApprovalPolicies(undefined, {}, null)).toBeUndefined();
  expect(approvalTimeoutMinutes(undefined)).toBe(1440);
  expect(approvalTimeoutMinutes({ timeout_minutes: 5 })).toBe(5);
});

test("a CLI's shell tool is matched by its command line under its own name (Claude Code's Bash), and only it", () => {
  const policy = { commands: ['git push*'] };
  const bash = { name: 'Bash', arguments: { command: 'git push origin main' } };
  expect(gateOf(policy, bash, 'Bash')).toBe('git push*');
  expect(gateOf(policy, bash)).toBeUndefined();
  expect(gateOf(policy, { name: 'run_command', arguments: { command: 'git push' } }, 'Bash')).toBeUndefined();
});
