import { JsonLines, MAX_LINE_CHARS } from '../../activities/harness/harness-transcript';
import { RawEventLog } from '../../activities/harness/raw-event-log';

/** A CLI's output as the sandbox may write it: any process of the run can write to the CLI's stdout. */

function collect() {
  const lines: { event?: Record<string, unknown>; raw: string }[] = [];
  const splitter = new JsonLines((event, raw) => lines.push({ event, raw }));
  return { lines, splitter };
}

test('events split across chunks and several in one chunk come out whole, in order; other lines as text', () => {
  const { lines, splitter } = collect();
  splitter.write(Buffer.from('{"type":"a","n":1}\n{"type":'));
  splitter.write(Buffer.from('"b"}\nplain text\n{"type":"c"}'));
  splitter.end();
  expect(lines.map((l) => l.event?.type ?? l.raw)).toEqual(['a', 'b', 'plain text', 'c']);
});

test('a line longer than the cap is dropped whole (its parts are not kept) and the next line is read', () => {
  const { lines, splitter } = collect();
  const chunk = Buffer.alloc(64 * 1024, 'x');
  // 64 MiB without a newline, as 64 KiB pipe reads: re-joining per chunk would take minutes.
  for (let i = 0; i < 1024; i++) splitter.write(chunk);
  splitter.write(Buffer.from('\n{"type":"after"}\n'));
  expect(lines).toHaveLength(2);
  expect(lines[0]!.event).toBeUndefined();
  expect(lines[0]!.raw).toMatch(/^\[agent-runs: a line of \d+\+ characters was dropped\]$/);
  expect(Number(/(\d+)\+/.exec(lines[0]!.raw)![1])).toBeGreaterThan(MAX_LINE_CHARS);
  expect(lines[1]!.event).toEqual({ type: 'after' });
});

test('the raw event log keeps whole lines up to its cap, never one line past it', () => {
  const log = new RawEventLog(1000);
  log.add('a'.repeat(400));
  log.add('b'.repeat(5000));
  log.add('c'.repeat(400));
  log.add('d'.repeat(400));
  expect(log.bytes).toBe(802);
  expect(log.cut).toBe(true);
  expect(log.contents().toString()).toBe(`${'a'.repeat(400)}\n${'c'.repeat(400)}\n`);
});
