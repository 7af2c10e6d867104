import type { SandboxedCommandResult } from '../../activities/sandbox/sandboxed-process';
import { invocationFailure } from '../../activities/harness/invocation-failure';

const ended = (fields: Partial<SandboxedCommandResult>): SandboxedCommandResult => ({
  exitCode: 0,
  signal: null,
  timedOut: false,
  cancelled: false,
  durationMs: 10,
  output: '',
  outputBytes: 0,
  refusals: [],
  oomKilled: false,
  ...fields,
});

const failureOf = (result: SandboxedCommandResult) =>
  invocationFailure({
    title: 'The CLI',
    result,
    report: { usage: {}, toolCalls: {}, errors: [] },
    gateway: { refusal: undefined, providerError: undefined },
    memoryMb: 768,
  });

const V8 =
  'FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n 1: 0xb8d0a3 node::Abort()';
const BUN =
  'Bun v1.4.6 (358d8293c) Linux x64\nRSS: 10.48 MB | Peak: 10.48 MB\n\npanic(main thread): abort() called\noh no: Bun has crashed. This indicates a bug in Bun, not your code.';
const RUST = 'memory allocation of 1073741824 bytes failed';
const V8_FATAL =
  '#\n# Fatal process out of memory: Failed to reserve virtual memory for CodeRange\n#\n----- Native stack trace -----';

test.each([
  ['V8 (Node) at its heap limit', ended({ exitCode: 134, output: V8 }), 134],
  ["Bun's abort", ended({ exitCode: 134, output: BUN }), 134],
  ['Rust', ended({ exitCode: null, signal: 'SIGABRT', output: RUST }), 134],
  ["Node 24's fatal error (a trap) reserving its code range", ended({ exitCode: 133, output: V8_FATAL }), 133],
  ['the same, as a signal', ended({ exitCode: null, signal: 'SIGTRAP', output: V8_FATAL }), 133],
])('%s: budget_exceeded, naming AGENT_SANDBOX_MEMORY_MB and its value', (_name, result, status) => {
  expect(failureOf(result)).toEqual({
    code: 'budget_exceeded',
    message: expect.stringMatching(
      new RegExp(
        `^The CLI ran out of memory: its runtime aborted \\(status ${status}\\) .* limit of 768 MiB \\(AGENT_SANDBOX_MEMORY_MB=768;`,
      ),
    ),
  });
});

test("the kernel killing the run's processes at their limit: budget_exceeded, whatever the CLI said", () => {
  expect(failureOf(ended({ exitCode: null, signal: 'SIGKILL', oomKilled: true }))).toEqual({
    code: 'budget_exceeded',
    message:
      "The CLI was killed by the kernel: the run's processes together reached their memory limit of 768 MiB (AGENT_SANDBOX_MEMORY_MB=768; an operator's setting).",
  });
});

test('an abort that says nothing of memory, or a memory message without an abort, is the CLI failing', () => {
  for (const result of [
    ended({ exitCode: 134, output: 'assertion failed: frames.len() > 0' }),
    ended({ exitCode: 133, output: 'a breakpoint' }),
    ended({ exitCode: 1, output: `Error: ${V8}` }),
    ended({ exitCode: 1, output: BUN }),
  ]) {
    expect(failureOf(result)).toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(/^The CLI exited with status/),
    });
  }
});
