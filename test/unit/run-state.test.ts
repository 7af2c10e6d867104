import {
  isAllowedMove,
  isTerminal,
  RUN_STATES,
  stateRank,
  turnIsOver,
  type RunMove,
  type RunState,
} from '../../core/run-state';

/** Every change of a run's state, written out: the table below is what the service allows. */
const ALLOWED: Record<RunMove, [RunState, RunState][]> = {
  forward: [
    ['QUEUED', 'INPROGRESS'],
    ['QUEUED', 'SUCCEEDED'],
    ['QUEUED', 'FAILED'],
    ['QUEUED', 'ERROR'],
    ['QUEUED', 'CANCELLED'],
    ['INPROGRESS', 'SUCCEEDED'],
    ['INPROGRESS', 'FAILED'],
    ['INPROGRESS', 'ERROR'],
    ['INPROGRESS', 'CANCELLED'],
    ['BLOCKED', 'SUCCEEDED'],
    ['BLOCKED', 'FAILED'],
    ['BLOCKED', 'ERROR'],
    ['BLOCKED', 'CANCELLED'],
  ],
  reopen: [
    ['SUCCEEDED', 'QUEUED'],
    ['FAILED', 'QUEUED'],
    ['ERROR', 'QUEUED'],
    ['CANCELLED', 'QUEUED'],
  ],
  withdraw: [
    ['QUEUED', 'SUCCEEDED'],
    ['QUEUED', 'FAILED'],
    ['QUEUED', 'ERROR'],
    ['QUEUED', 'CANCELLED'],
  ],
  block: [['INPROGRESS', 'BLOCKED']],
  unblock: [['BLOCKED', 'INPROGRESS']],
};

test.each(Object.keys(ALLOWED) as RunMove[])('every %s move, and no other, is allowed', (move) => {
  const allowed = new Set(ALLOWED[move].map(([from, to]) => `${from}->${to}`));
  for (const from of RUN_STATES) {
    for (const to of RUN_STATES) {
      expect([move, from, to, isAllowedMove(from, to, move)]).toEqual([move, from, to, allowed.has(`${from}->${to}`)]);
    }
  }
});

test('within a turn a run only moves forward, and a terminal state is the end of its turn', () => {
  for (const state of RUN_STATES) {
    expect(isAllowedMove(state, state, 'forward')).toBe(false);
    if (isTerminal(state)) expect(RUN_STATES.filter((to) => isAllowedMove(state, to, 'forward'))).toEqual([]);
  }
  expect(RUN_STATES.map(stateRank)).toEqual([0, 1, 1, 2, 2, 2, 2]);
});

test('a turn is over for a step once the stored run ended it or a follow-up reopened the run past it', () => {
  const over = RUN_STATES.filter((state) => turnIsOver({ state, turn: 3 }, 3));
  // A blocked run's turn goes on: its step runs again once the call is decided.
  expect(over).toEqual(['SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED']);
  expect(RUN_STATES.filter((state) => turnIsOver({ state, turn: 4 }, 3))).toEqual(RUN_STATES);
  expect(RUN_STATES.filter((state) => turnIsOver({ state, turn: 3 }, 4))).toEqual([]);
});
