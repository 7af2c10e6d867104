import { CommanderError } from 'commander';
import { ApiProblem, ApiUnreachable } from './api-client';
import { EXIT_CODES, UsageError } from './exit-codes';
import { createProgram } from './program';
import { terminalSafe } from './terminal-text';

/** What an error says to the person or job that ran the command, and the code to exit with. */
function report(err: unknown): number {
  if (err instanceof CommanderError) {
    // Commander has printed the message (or the help) already; help and --version are no error.
    return err.exitCode === 0 ? EXIT_CODES.ok : EXIT_CODES.usage;
  }
  if (err instanceof UsageError) {
    process.stderr.write(`agent-runs: ${err.message}\n`);
    return EXIT_CODES.usage;
  }
  if (err instanceof ApiProblem) {
    const code = err.errorCode ? `${err.errorCode}, ` : '';
    process.stderr.write(`Error: ${terminalSafe(err.detail)} (${code}HTTP ${err.status})\n`);
    return EXIT_CODES.error;
  }
  if (err instanceof ApiUnreachable) {
    process.stderr.write(`Error: ${err.message}\n`);
    return EXIT_CODES.error;
  }
  process.stderr.write(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
  return EXIT_CODES.error;
}

async function main(): Promise<number> {
  const result = { exitCode: EXIT_CODES.ok as number };
  try {
    await createProgram(result).parseAsync(process.argv);
    return result.exitCode;
  } catch (err) {
    return report(err);
  }
}

void main()
  .catch(report)
  .then((code) => {
    // Exit once stdout has taken everything: an open keep-alive socket must not hold the process.
    process.stdout.write('', () => process.exit(code));
  });
