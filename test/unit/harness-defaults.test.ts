import { harnessWithDefaults } from '../../services/runs/harness-request';
import { withIdentityDefaults } from '../../services/runs/new-run';
import { defaultIdentityFields } from '../../db/agent-identities';
import { type AgentIdentity } from '../../db/agent-identity-reads';

/** How a run's harness fields and its agent's defaults combine. */

const claudeAgent = {
  harness: { type: 'claude' as const, model_id: 'claude-haiku-4-5' },
  harnessAuthSecrets: { claude_auth_secret_name: 'team-claude' },
};

describe('harnessWithDefaults', () => {
  test("a run that names no harness takes its agent's, with the agent's secret", () => {
    expect(harnessWithDefaults({}, claudeAgent)).toStrictEqual({
      harness: { type: 'claude', model_id: 'claude-haiku-4-5' },
      harness_auth_secrets: { claude_auth_secret_name: 'team-claude' },
    });
  });

  test("the run's own harness wins, `oz` included; the agent's secret goes only with its harness", () => {
    expect(harnessWithDefaults({ harness: { type: 'oz' } }, claudeAgent)).toStrictEqual({});
    expect(harnessWithDefaults({ harness: { type: 'codex' } }, claudeAgent)).toStrictEqual({
      harness: { type: 'codex' },
    });
    expect(
      harnessWithDefaults({ harness: { type: 'claude', model_id: 'claude-opus-4-1' } }, claudeAgent),
    ).toStrictEqual({
      harness: { type: 'claude', model_id: 'claude-opus-4-1' },
      harness_auth_secrets: { claude_auth_secret_name: 'team-claude' },
    });
  });

  test("the run's own secret names win field by field; one for another harness stays, for the check to refuse", () => {
    expect(
      harnessWithDefaults({ harness_auth_secrets: { claude_auth_secret_name: 'mine' } }, claudeAgent),
    ).toStrictEqual({
      harness: { type: 'claude', model_id: 'claude-haiku-4-5' },
      harness_auth_secrets: { claude_auth_secret_name: 'mine' },
    });
    expect(harnessWithDefaults({ harness_auth_secrets: { codex_auth_secret_name: 'c' } }, null)).toStrictEqual({
      harness_auth_secrets: { codex_auth_secret_name: 'c' },
    });
  });
});

test('withIdentityDefaults stores `oz` as no harness, with or without an agent', () => {
  const agent: AgentIdentity = {
    ...defaultIdentityFields('bot'),
    ...claudeAgent,
    uid: 'sa_1',
    teamId: 't',
    createdAt: new Date(),
    updatedAt: new Date(),
  };
  const base = { model_id: 'openai/gpt-4o', idle_timeout_minutes: 1 };
  expect(withIdentityDefaults({ ...base, harness: { type: 'oz' } }, null)).toStrictEqual(base);
  expect(withIdentityDefaults({ ...base, harness: { type: 'oz' } }, agent)).toStrictEqual({ ...base, name: 'bot' });
  expect(withIdentityDefaults(base, agent)).toStrictEqual({
    ...base,
    name: 'bot',
    harness: claudeAgent.harness,
    harness_auth_secrets: claudeAgent.harnessAuthSecrets,
  });
});
