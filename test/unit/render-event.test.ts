import { renderEvent } from '../../cli/render-event';
import { styler } from '../../cli/terminal-text';
import type { RunEvent } from '../../cli/wire';

const notice = (payload: Record<string, unknown>): RunEvent => ({
  id: '1',
  run_id: 'r',
  kind: 'notice',
  turn: 1,
  created_at: '2026-12-07T00:00:00.000Z',
  payload,
});

describe('notices in `agent-runs run --follow`', () => {
  test('an ordinary notice reads like the lines around it: no alarm marks, no warning colour', () => {
    const plain = renderEvent(notice({ message: 'Attempt 2 resumes step 3.' }), styler(false));
    expect(plain).toBe('--- note: Attempt 2 resumes step 3.\n');
    const coloured = renderEvent(notice({ message: 'Attempt 2 resumes step 3.' }), styler(true));
    expect(coloured).not.toContain('!!!');
    expect(coloured).not.toContain('\x1b[33m'); // yellow
  });

  test('a warning keeps its emphasis', () => {
    const plain = renderEvent(notice({ message: 'Skipped factory file x.', level: 'warning' }), styler(false));
    expect(plain).toBe('!!! Skipped factory file x.\n');
    expect(renderEvent(notice({ message: 'm', level: 'warning' }), styler(true))).toContain('\x1b[33m');
  });
});
