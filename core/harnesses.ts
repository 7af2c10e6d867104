/**
 * The agents a run can be worked by: this service's own step loop (`oz`) and the coding-agent
 * CLIs it runs in the run's sandbox. One definition for the API (validation, views), the worker
 * (what it offers) and the activities (how each is driven).
 */
export const HARNESS_TYPES = ['oz', 'claude', 'codex', 'gemini'] as const;
export type HarnessType = (typeof HARNESS_TYPES)[number];
export type CliHarnessType = Exclude<HarnessType, 'oz'>;
export const CLI_HARNESS_TYPES = HARNESS_TYPES.filter((h): h is CliHarnessType => h !== 'oz');

/** The provider protocols the model gateway forwards. */
export type HarnessProvider = 'anthropic' | 'openai' | 'gemini';

/** The `harness_auth_secrets` fields the official clients send. */
export type HarnessSecretField = 'claude_auth_secret_name' | 'codex_auth_secret_name';

export interface CliHarnessSpec {
  /** As people call it. */
  title: string;
  provider: HarnessProvider;
  /** The field of `harness_auth_secrets` that names this harness's managed secret, if it takes one. */
  secretField?: HarnessSecretField;
  /** The `harness` of the client's usage envelope, for harnesses the client has one for. */
  usageEnvelope?: 'CLAUDE_CODE' | 'CODEX';
  /** `harness.reasoning_level` values the CLI understands; undefined: it has none (the field is refused). */
  reasoningLevels?: readonly string[];
  /** Models the deployment lists for it (a run may name any model its provider serves). */
  models: readonly { id: string; displayName: string }[];
  /**
   * Where `config.approval` can gate the CLI's own tool calls (through its hooks, decided at the
   * model gateway): the name of its shell tool, whose `command` the `commands` globs match.
   * Undefined: the CLI cannot be gated, and a run with a policy is refused.
   */
  approvals?: { commandTool: string };
}

export const CLI_HARNESSES: Record<CliHarnessType, CliHarnessSpec> = {
  claude: {
    title: 'Claude Code',
    provider: 'anthropic',
    secretField: 'claude_auth_secret_name',
    usageEnvelope: 'CLAUDE_CODE',
    approvals: { commandTool: 'Bash' },
    models: [
      { id: 'claude-sonnet-4-5', displayName: 'Claude Sonnet 4.5' },
      { id: 'claude-opus-4-1', displayName: 'Claude Opus 4.1' },
      { id: 'claude-haiku-4-5', displayName: 'Claude Haiku 4.5' },
    ],
  },
  codex: {
    title: 'Codex CLI',
    provider: 'openai',
    secretField: 'codex_auth_secret_name',
    usageEnvelope: 'CODEX',
    reasoningLevels: ['minimal', 'low', 'medium', 'high'],
    models: [
      { id: 'gpt-5-codex', displayName: 'GPT-5 Codex' },
      { id: 'gpt-5', displayName: 'GPT-5' },
    ],
  },
  gemini: {
    title: 'Gemini CLI',
    provider: 'gemini',
    models: [
      { id: 'gemini-2.5-pro', displayName: 'Gemini 2.5 Pro' },
      { id: 'gemini-2.5-flash', displayName: 'Gemini 2.5 Flash' },
    ],
  },
};

export function isCliHarness(type: string | null | undefined): type is CliHarnessType {
  return (CLI_HARNESS_TYPES as readonly string[]).includes(type ?? '');
}
