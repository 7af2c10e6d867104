import { ApiError } from '../../core/api-error';
import type { CreateRunRequest } from '../../core/schemas/run-schemas';
import { assertRunFieldsSupported, honouredConfig, ORCHESTRATE_MODE_WHY } from '../../services/runs/run-request-fields';

/** The detail of the `feature_not_available` refusal of `body`, or undefined when it is accepted. */
function refused(body: CreateRunRequest): string | undefined {
  try {
    assertRunFieldsSupported(body);
    return undefined;
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'feature_not_available' || error.status !== 400) throw error;
    return error.detail;
  }
}

type RunConfig = NonNullable<CreateRunRequest['config']>;

describe('assertRunFieldsSupported', () => {
  test('mode "orchestrate" is refused with a pointer to factories; "normal" and "plan" are fine', () => {
    expect(refused({ prompt: 'p', mode: 'orchestrate' })).toBe(
      `\`mode\` is not available on this service: ${ORCHESTRATE_MODE_WHY}`,
    );
    expect(ORCHESTRATE_MODE_WHY).toContain('POST /agent/factories/{uid}/runs');
    expect(refused({ prompt: 'p', mode: 'plan' })).toBeUndefined();
    expect(refused({ prompt: 'p', mode: 'normal' })).toBeUndefined();
  });

  test('config.harness and config.harness_auth_secrets are not refused here (the harness request check owns them)', () => {
    expect(refused({ prompt: 'p', config: { harness: { type: 'claude' } } })).toBeUndefined();
    expect(refused({ prompt: 'p', config: { harness: { type: 'oz', model_id: 'x' } } })).toBeUndefined();
    expect(refused({ prompt: 'p', config: { harness: null } })).toBeUndefined();
    expect(
      refused({ prompt: 'p', config: { harness_auth_secrets: { claude_auth_secret_name: 'k' } } }),
    ).toBeUndefined();
  });

  test.each<[string, RunConfig, string]>([
    [
      'config.inference_providers',
      { inference_providers: { openai: { key: 'k' } } },
      'models come from the providers the operator configures.',
    ],
    [
      'config.credential_strategy',
      { credential_strategy: 'CREATOR' },
      "repositories are cloned with the environment's token.",
    ],
    ['config.memory_stores', { memory_stores: [{ id: 'm' }] }, 'there are no memory stores.'],
    ['config.runner_id', { runner_id: 'r-1' }, "runs execute on this service's workers."],
    [
      'config.session_sharing',
      { session_sharing: { public: true } },
      "a run's transcript is shared through its `session_link`, a signed link that needs no key until it expires (SESSION_LINK_TTL_SECONDS).",
    ],
  ])('%s is refused when it asks for something', (path, config, why) => {
    expect(refused({ prompt: 'p', config })).toBe(`\`${path}\` is not available on this service: ${why}`);
  });

  test('null, false, "", empty lists and objects of nothing ask for nothing', () => {
    const nothing = {
      harness_auth_secrets: {},
      inference_providers: { openai: { key: '' } },
      credential_strategy: null,
      memory_stores: [],
      runner_id: '',
      session_sharing: { public: false },
    } as RunConfig;
    expect(refused({ prompt: 'p', config: nothing })).toBeUndefined();
  });

  test('the first field asked for, in the order of the list, is the one named', () => {
    expect(
      refused({ prompt: 'p', config: { session_sharing: { public: true }, runner_id: 'r', memory_stores: ['m'] } }),
    ).toMatch(/^`config\.memory_stores`/);
    expect(refused({ prompt: 'p', config: { runner_id: 'r', memory_stores: ['m'] } })).toMatch(
      /^`config\.memory_stores`/,
    );
  });
});

describe('honouredConfig', () => {
  test('no config stays none', () => {
    expect(honouredConfig(undefined)).toBeUndefined();
  });

  test('drops the fields that mean nothing here and keeps the rest', () => {
    const config = {
      model_id: 'openai/gpt-4o',
      max_steps: 7,
      skills: ['acme/s:a'],
      harness: { type: 'oz' },
      harness_auth_secrets: {},
      inference_providers: {},
      credential_strategy: null,
      memory_stores: [],
      runner_id: '',
      session_sharing: {},
      worker_host: 'warp',
    } as RunConfig;
    const before = structuredClone(config);
    expect(honouredConfig(config)).toStrictEqual({
      model_id: 'openai/gpt-4o',
      max_steps: 7,
      skills: ['acme/s:a'],
      harness: { type: 'oz' },
    });
    // The request's own object is left as it was.
    expect(config).toStrictEqual(before);
  });

  test('a harness sent is kept without its empty fields (`oz`, or none named, as `{type: "oz"}`, which wins over an agent\'s); empty secret names are dropped', () => {
    expect(
      honouredConfig({
        harness: { type: 'claude', model_id: '' },
        harness_auth_secrets: { claude_auth_secret_name: 'team-claude', codex_auth_secret_name: '' },
      }),
    ).toStrictEqual({ harness: { type: 'claude' }, harness_auth_secrets: { claude_auth_secret_name: 'team-claude' } });
    expect(honouredConfig({ harness: { type: 'oz', model_id: 'x' } })).toStrictEqual({ harness: { type: 'oz' } });
    expect(honouredConfig({ harness: { model_id: 'claude-opus-4-1' } })).toStrictEqual({ harness: { type: 'oz' } });
    // Not sent: the run takes its agent's.
    expect(honouredConfig({ harness: null, harness_auth_secrets: null })).toStrictEqual({});
  });

  test('worker_host is kept, trimmed, when it names a worker; "warp", blank and null mean any', () => {
    expect(honouredConfig({ worker_host: '  gpu-1 ' })).toStrictEqual({ worker_host: 'gpu-1' });
    for (const any of ['warp', ' warp ', '', '   ', null, undefined]) {
      expect([any, honouredConfig({ worker_host: any })]).toStrictEqual([any, {}]);
    }
  });
});
