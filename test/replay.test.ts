import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { HISTORIES_DIR, historyFromObject } from './helpers/replay-fixtures';
import { testStack } from './helpers/test-context';
import { SILENT_LOGGER } from './helpers/silent-logger';

/**
 * Workflow code must replay the histories of runs already in flight, or a deploy breaks them.
 * The histories in test/replay/histories are recorded from the suite's own scenarios
 * (`npm run fixtures:record`) and replayed here against the current workflow bundle.
 */
const SCENARIOS = [
  'one-step',
  'ten-steps',
  'environment-setup-tools-diffs',
  'followups-in-progress',
  'followup-after-succeeded',
  'followup-after-idle-window',
  'followup-after-cancel',
  'followup-around-cancel',
  'idle-window-ends',
  'cancel-during-model-call',
  'cancel-during-command',
  'continue-as-new-mid-turn',
  'continue-as-new-at-idle-boundary',
  'worker-killed-mid-command',
  'reprovision-elsewhere',
  'provisioning-waits-for-capacity',
  'step-waits-while-worker-busy',
  // Recorded with the workflow code from before the workspace-worker-lease patch: runs that were
  // in flight when that change deployed must go on the old way.
  'pre-lease-one-step',
  'pre-lease-ten-steps',
  'pre-lease-followup-after-succeeded',
  'pre-lease-idle-window-ends',
  'pre-lease-cancel-during-command',
  // A schedule's firing (test/schedules.test.ts): one that created its run, one that was refused.
  'scheduled-run-creates-run',
  'scheduled-run-refused',
  // The service's maintenance firing (test/resource-lists.test.ts), and ones recorded before the
  // audit-retention and the pull-request-poll patches.
  'maintenance-prunes',
  'maintenance-before-audit-retention',
  'maintenance-before-pull-request-poll',
  // Factories (test/factory-orchestration.test.ts): a foreman that dispatches two children and
  // waits for them, a child that failed, and a foreman cancelled with its child.
  'factory-foreman-two-children',
  'factory-child-failed',
  'factory-foreman-cancelled',
  // TEAM_MAX_CONCURRENT_RUNS (test/team-quotas.test.ts): a run that waited QUEUED for a slot of
  // its team, was woken when one freed, and ran (patch team-admission).
  'waits-for-team-slot',
  // An interrupt (test/interrupt.test.ts): the turn's scope cancelled during a model call and
  // during a command, then a follow-up's turn.
  'interrupt-during-model-call',
  'interrupt-during-command',
  // Approvals (test/approvals.test.ts): a command blocked, approved, run; and the same recorded
  // before the blocked-release-concurrent patch (the decision waited for the workspace's removal).
  'blocked-approved',
  'pre-release-blocked-approved',
];

function histories() {
  return readdirSync(HISTORIES_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({
      workflowId: file,
      history: historyFromObject(JSON.parse(readFileSync(path.join(HISTORIES_DIR, file), 'utf8'))),
    }));
}

async function replayFailures(options: Parameters<typeof Worker.runReplayHistories>[0]): Promise<string[]> {
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories(options, histories())) {
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  return failures;
}

test('there is a recorded history for every workflow scenario', () => {
  const files = readdirSync(HISTORIES_DIR);
  for (const scenario of SCENARIOS)
    expect([scenario, files.some((f) => f.startsWith(`${scenario}-`))]).toEqual([scenario, true]);
  // A run that continued as new left more than one execution behind.
  expect(files.filter((f) => f.startsWith('continue-as-new-mid-turn-')).length).toBeGreaterThanOrEqual(2);
});

test('every recorded history replays against the current workflow code', async () => {
  expect(await replayFailures({ workflowBundle: { codePath: testStack().workflowBundlePath } })).toEqual([]);
});

test('the replay check catches an incompatible change', async () => {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('./replay/incompatible-workflow'),
    logger: SILENT_LOGGER,
  });
  const failures = await replayFailures({ workflowBundle: { code } });
  expect(failures.length).toBe(histories().length);
});
