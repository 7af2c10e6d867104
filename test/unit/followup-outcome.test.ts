import { followupOutcome } from '../../services/runs/followups';

test('a follow-up is told how it reaches the run, from the state and turn the run was in', () => {
  expect(followupOutcome({ state: 'QUEUED', turn: 1 })).toBe('queued_prompt');
  expect(followupOutcome({ state: 'QUEUED', turn: 3 })).toBe('queue_pending');
  expect(followupOutcome({ state: 'INPROGRESS', turn: 2 })).toBe('live_session');
  for (const state of ['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'] as const) {
    expect(followupOutcome({ state, turn: 1 })).toBe('handoff_execution');
  }
});
