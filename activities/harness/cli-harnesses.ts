import type { CliHarnessType } from '../../core/harnesses';
import type { CliHarness, CliInstall } from './cli-harness';
import { claudeCode } from './claude-code';
import { codexCli } from './codex-cli';
import { geminiCli } from './gemini-cli';

export const CLI_HARNESS_ADAPTERS: Record<CliHarnessType, CliHarness> = {
  claude: claudeCode,
  codex: codexCli,
  gemini: geminiCli,
};

const located = new Map<CliHarnessType, CliInstall | { missing: string }>();

/** Where this worker has each harness's CLI (looked up once per process). */
export function installedHarness(type: CliHarnessType): CliInstall | { missing: string } {
  let found = located.get(type);
  if (!found) {
    found = CLI_HARNESS_ADAPTERS[type].locate();
    located.set(type, found);
  }
  return found;
}

/** The harnesses a worker offers, with their CLI versions, and those it cannot, with why. */
export interface HarnessOffer {
  offered: Record<string, string>;
  missing: Record<string, string>;
}

export function harnessOffer(): HarnessOffer {
  const offered: Record<string, string> = { oz: 'built in' };
  const missing: Record<string, string> = {};
  for (const type of Object.keys(CLI_HARNESS_ADAPTERS) as CliHarnessType[]) {
    const found = installedHarness(type);
    if ('missing' in found) missing[type] = found.missing;
    else offered[type] = found.version;
  }
  return { offered, missing };
}
