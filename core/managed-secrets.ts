import type { CliHarnessType } from './harnesses';

/** What a managed secret holds; a harness accepts only the kinds its provider takes. */
export const MANAGED_SECRET_KINDS = [
  'anthropic_api_key',
  'claude_oauth_token',
  'openai_api_key',
  'gemini_api_key',
  'registry_credentials',
  'git_credentials',
  'other',
] as const;
export type ManagedSecretKind = (typeof MANAGED_SECRET_KINDS)[number];

/** The kinds each harness's `harness_auth_secrets` field accepts. */
export const HARNESS_SECRET_KINDS: Record<CliHarnessType, readonly ManagedSecretKind[]> = {
  claude: ['anthropic_api_key', 'claude_oauth_token'],
  codex: ['openai_api_key'],
  gemini: ['gemini_api_key'],
};

export const MANAGED_SECRET_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
export const MANAGED_SECRET_NAME_RULE =
  'must be 1 to 128 letters, digits, `_`, `.` or `-`, starting with a letter or digit';

/** The kind a value's well-known prefix says it is; undefined when it has none. */
export function inferSecretKind(value: string): ManagedSecretKind | undefined {
  if (value.startsWith('sk-ant-oat')) return 'claude_oauth_token';
  if (value.startsWith('sk-ant-')) return 'anthropic_api_key';
  if (value.startsWith('sk-')) return 'openai_api_key';
  if (value.startsWith('AIza')) return 'gemini_api_key';
  return undefined;
}
