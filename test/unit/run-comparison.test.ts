import { parseCommand, reportJson, reportText, UsageError } from '../../bin/restore-command';
import type { RunState } from '../../core/run-state';
import {
  ago,
  compareRun,
  DIFFERENCE_KINDS,
  LINGER_SECONDS,
  type RunWorkflow,
  type StoredRun,
} from '../../services/restore/run-comparison';

const QUIET = 30;
const HOUR = 3600;

const row = (state: RunState, over: Partial<StoredRun> = {}): StoredRun => ({
  state,
  turn: 1,
  updatedSecondsAgo: HOUR,
  endedSecondsAgo: ['QUEUED', 'INPROGRESS'].includes(state) ? null : HOUR,
  idleTimeoutMinutes: 10,
  ...over,
});

const workflow = (status: string, state?: string, over: Partial<RunWorkflow> = {}): RunWorkflow => ({
  workflowId: 'agent-run-x',
  status,
  ...(state === undefined ? {} : { state }),
  startedSecondsAgo: 2 * HOUR,
  ...over,
});

const kindOf = (stored: StoredRun | undefined, wf: RunWorkflow | undefined) => {
  const comparison = compareRun(stored, wf, QUIET);
  return comparison.outcome === 'differ' ? comparison.difference.kind : comparison.outcome;
};

describe('a run PostgreSQL has under way', () => {
  test.each(['QUEUED', 'INPROGRESS'] as const)(
    '%s with an open workflow agrees, whatever state the workflow last set',
    (state) => {
      expect(kindOf(row(state), workflow('RUNNING', 'INPROGRESS'))).toBe('agree');
      // A follow-up reopened it; its workflow has not started the turn yet (or waits for admission).
      expect(kindOf(row(state), workflow('RUNNING', 'SUCCEEDED'))).toBe('agree');
      expect(kindOf(row(state), workflow('PAUSED', 'INPROGRESS'))).toBe('agree');
    },
  );

  test('without a workflow, or with a closed one, differs', () => {
    expect(kindOf(row('INPROGRESS'), undefined)).toBe('workflow_missing');
    for (const status of ['COMPLETED', 'FAILED', 'TERMINATED', 'TIMED_OUT', 'CANCELLED'])
      expect(kindOf(row('QUEUED'), workflow(status, 'SUCCEEDED'))).toBe('workflow_closed');
  });
});

describe('a run PostgreSQL says ended', () => {
  test('with its workflow closed or gone (past the retention), agrees', () => {
    expect(kindOf(row('SUCCEEDED'), workflow('COMPLETED', 'SUCCEEDED'))).toBe('agree');
    expect(kindOf(row('ERROR'), workflow('TERMINATED', 'INPROGRESS'))).toBe('agree');
    expect(kindOf(row('FAILED', { endedSecondsAgo: 90 * 86_400 }), undefined)).toBe('agree');
  });

  test('with its workflow waiting out the idle window in the same state, agrees, until well past the window', () => {
    const window = 10 * 60 + LINGER_SECONDS;
    const waiting = workflow('RUNNING', 'SUCCEEDED');
    expect(kindOf(row('SUCCEEDED', { endedSecondsAgo: 60 }), waiting)).toBe('agree');
    expect(kindOf(row('SUCCEEDED', { endedSecondsAgo: window - 1 }), waiting)).toBe('agree');
    expect(kindOf(row('SUCCEEDED', { endedSecondsAgo: window + 1 }), waiting)).toBe('workflow_ahead');
    // A longer window of its own is waited out too.
    expect(kindOf(row('SUCCEEDED', { endedSecondsAgo: window + 1, idleTimeoutMinutes: 60 }), waiting)).toBe('agree');
  });

  test('with its workflow on a turn (or a follow-up) the backup lacks, or ended otherwise, differs at once', () => {
    const justEnded = row('SUCCEEDED', { endedSecondsAgo: 60 });
    expect(kindOf(justEnded, workflow('RUNNING', 'INPROGRESS'))).toBe('workflow_ahead');
    expect(kindOf(justEnded, workflow('RUNNING', 'QUEUED'))).toBe('workflow_ahead');
    expect(kindOf(justEnded, workflow('RUNNING', 'FAILED'))).toBe('workflow_ahead');
  });
});

describe('a workflow without a run row', () => {
  test('open, or closed after doing anything, differs', () => {
    expect(kindOf(undefined, workflow('RUNNING', 'INPROGRESS'))).toBe('run_missing');
    expect(kindOf(undefined, workflow('RUNNING', 'QUEUED'))).toBe('run_missing');
    expect(kindOf(undefined, workflow('COMPLETED', 'SUCCEEDED'))).toBe('run_missing');
    expect(kindOf(undefined, workflow('TERMINATED', 'QUEUED'))).toBe('run_missing');
  });

  test('that of a create whose transaction rolled back (it completed at once, still QUEUED) agrees', () => {
    expect(kindOf(undefined, workflow('COMPLETED', 'QUEUED'))).toBe('agree');
    expect(kindOf(undefined, workflow('COMPLETED'))).toBe('agree');
  });
});

test('a row or a workflow that changed within the quiet window is not compared', () => {
  expect(kindOf(row('INPROGRESS', { updatedSecondsAgo: QUIET - 1 }), undefined)).toBe('recent');
  expect(kindOf(undefined, workflow('RUNNING', 'QUEUED', { startedSecondsAgo: QUIET - 1 }))).toBe('recent');
  expect(kindOf(row('INPROGRESS', { updatedSecondsAgo: QUIET }), undefined)).toBe('workflow_missing');
});

test('a difference says what each side has', () => {
  const comparison = compareRun(
    row('SUCCEEDED', { turn: 3, endedSecondsAgo: 2 * 86_400 }),
    workflow('RUNNING', 'INPROGRESS'),
    QUIET,
  );
  expect(comparison).toEqual({
    outcome: 'differ',
    difference: {
      kind: 'workflow_ahead',
      database: 'SUCCEEDED (turn 3, ended 2 d ago)',
      temporal: 'RUNNING (INPROGRESS)',
    },
  });
  expect(compareRun(undefined, workflow('RUNNING', 'INPROGRESS'), QUIET)).toMatchObject({
    difference: { database: 'no row' },
  });
  expect([ago(42), ago(17 * 60), ago(5 * HOUR), ago(3 * 86_400)]).toEqual([
    '42 s ago',
    '17 min ago',
    '5 h ago',
    '3 d ago',
  ]);
});

describe('npm run restore', () => {
  test('check takes --json and --quiet-seconds; anything else is a usage error', () => {
    expect(parseCommand(['check'])).toEqual({ name: 'check', json: false, quietSeconds: 30 });
    expect(parseCommand(['check', '--json', '--quiet-seconds', '0'])).toEqual({
      name: 'check',
      json: true,
      quietSeconds: 0,
    });
    for (const argv of [[], ['fix'], ['check', '--quiet-seconds', 'soon'], ['check', '--force'], ['check', 'extra']])
      expect(() => parseCommand(argv)).toThrow(UsageError);
  });

  const report = {
    taskQueue: 'agent-runs',
    runsCompared: 3,
    workflowsListed: 2,
    notCompared: ['r3'],
    differences: [
      {
        runId: 'r1',
        kind: 'workflow_closed' as const,
        workflowId: 'agent-run-r1',
        database: 'INPROGRESS (turn 1)',
        temporal: 'TERMINATED',
      },
    ],
  };

  test('the table names each run, its difference and both sides, then what to do and what was left out', () => {
    const text = reportText(report);
    expect(text).toMatch(/r1\s*│\s*workflow_closed\s*│\s*INPROGRESS \(turn 1\)\s*│\s*TERMINATED/);
    expect(text).toContain(`workflow_closed (1): ${DIFFERENCE_KINDS.workflow_closed.means}`);
    expect(text).toContain(`What to do: ${DIFFERENCE_KINDS.workflow_closed.action}`);
    expect(text).toContain('1 differ.');
    expect(text).toContain('1 changed within the quiet window and were not compared (r3): check again.');
    expect(reportText({ ...report, notCompared: [], differences: [] })).toMatch(/PostgreSQL and Temporal agree\.\n$/);
  });

  test('--json has the same, in snake_case', () => {
    expect(JSON.parse(reportJson(report))).toEqual({
      task_queue: 'agent-runs',
      runs_compared: 3,
      workflows_listed: 2,
      not_compared: ['r3'],
      differences: [
        {
          run_id: 'r1',
          kind: 'workflow_closed',
          workflow_id: 'agent-run-r1',
          database: 'INPROGRESS (turn 1)',
          temporal: 'TERMINATED',
          means: DIFFERENCE_KINDS.workflow_closed.means,
          action: DIFFERENCE_KINDS.workflow_closed.action,
        },
      ],
    });
  });
});
