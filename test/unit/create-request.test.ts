import { ApiError } from '../../core/api-error';
import { loadConfig } from '../../core/config';
import type { CreateRunRequest } from '../../core/schemas/run-schemas';
import { checkCreateRequest, decodeAttachments } from '../../services/runs/create-request';

/** What a refusal says: the problem document's code, status and detail. */
function refusal(check: () => unknown): { code: string; status: number; detail: string } {
  try {
    check();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return { code: error.code, status: error.status, detail: error.detail };
  }
  throw new Error('expected a refusal, and the request was accepted');
}

const config = loadConfig({ GIT_ALLOWED_OWNERS: 'Acme,tools' });
const openConfig = loadConfig({});

describe('checkCreateRequest', () => {
  test('returns the skill the request names, `skill` before `config.skill_spec`', () => {
    expect(checkCreateRequest(config, { prompt: 'p' })).toBeUndefined();
    expect(checkCreateRequest(config, { config: { skill_spec: 'acme/skills:lint' } })).toBe('acme/skills:lint');
    expect(checkCreateRequest(config, { skill: 'tools/s:a', config: { skill_spec: 'acme/skills:lint' } })).toBe(
      'tools/s:a',
    );
  });

  test('computer use is not available, and saying false is fine', () => {
    expect(refusal(() => checkCreateRequest(config, { prompt: 'p', config: { computer_use_enabled: true } }))).toEqual({
      code: 'feature_not_available',
      status: 400,
      detail: 'Computer use is not available on this service; omit `config.computer_use_enabled`.',
    });
    expect(() => checkCreateRequest(config, { prompt: 'p', config: { computer_use_enabled: false } })).not.toThrow();
  });

  test('fields the service cannot honour are refused before anything else is looked at', () => {
    const body: CreateRunRequest = { prompt: 'p', mode: 'orchestrate', config: { max_steps: 10_000 } };
    expect(refusal(() => checkCreateRequest(config, body))).toMatchObject({
      code: 'feature_not_available',
      detail: expect.stringMatching(/^`mode` is not available on this service: .*POST \/agent\/factories/),
    });
  });

  test('a skill outside GIT_ALLOWED_OWNERS is 403, naming the field it came from', () => {
    expect(refusal(() => checkCreateRequest(config, { skill: 'evil/repo:steal' }))).toEqual({
      code: 'not_authorized',
      status: 403,
      detail:
        "`skill`: repository evil/repo is not allowed: this service's GIT_ALLOWED_OWNERS limits repositories to the owners acme, tools, and evil is not one of them.",
    });
    expect(refusal(() => checkCreateRequest(config, { config: { skill_spec: 'evil/repo:steal' } })).detail).toMatch(
      /^`config\.skill_spec`: repository evil\/repo/,
    );
    const extra = { prompt: 'p', config: { skills: ['acme/a:one', 'evil/b:two'] } };
    expect(refusal(() => checkCreateRequest(config, extra)).detail).toMatch(/^`config\.skills\.1`: repository evil\/b/);
  });

  test('owners compare without case; bundled skills and an unset GIT_ALLOWED_OWNERS allow any', () => {
    expect(checkCreateRequest(config, { skill: 'ACME/skills:lint' })).toBe('ACME/skills:lint');
    expect(checkCreateRequest(config, { skill: 'agent-runs/bundled:factory-files' })).toBe(
      'agent-runs/bundled:factory-files',
    );
    expect(checkCreateRequest(openConfig, { skill: 'anyone/repo:x' })).toBe('anyone/repo:x');
    // A list with no owner in it allows none.
    expect(refusal(() => checkCreateRequest(loadConfig({ GIT_ALLOWED_OWNERS: ',' }), { skill: 'a/b:c' })).detail).toBe(
      "`skill`: repository a/b is not allowed: this service's GIT_ALLOWED_OWNERS allows no repository owner.",
    );
  });

  test('a model of a provider the service does not have is refused with the providers it has; a served one passes', () => {
    expect(refusal(() => checkCreateRequest(config, { prompt: 'p', config: { model_id: 'google/gemini' } }))).toEqual({
      code: 'invalid_request',
      status: 400,
      detail: '`config.model_id`: this service has no provider "google"; use `openai/<model>` or `anthropic/<model>`.',
    });
    expect(() =>
      checkCreateRequest(config, { prompt: 'p', config: { model_id: 'anthropic/claude-sonnet-4-5' } }),
    ).not.toThrow();
  });

  test('a model the service does not serve is refused, naming the field and listing those it serves', () => {
    expect(
      refusal(() => checkCreateRequest(config, { prompt: 'p', config: { model_id: 'openai/gpt-9-ultra' } })),
    ).toEqual({
      code: 'invalid_request',
      status: 400,
      detail:
        '`config.model_id`: this service does not serve the model "openai/gpt-9-ultra"; it serves `anthropic/claude-haiku-4-5`, `anthropic/claude-sonnet-4-5`, `openai/gpt-4.1`, `openai/gpt-4.1-mini`, `openai/gpt-4o`, `openai/gpt-4o-mini` (`GET /api/v1/agent/models` lists them; an operator adds a model with `MODEL_CONTEXT_TOKENS`).',
    });
    // The operator's additions and default are served; a schedule names its own field.
    const extended = loadConfig({
      MODEL_CONTEXT_TOKENS: '{"openai/llama-3.3-70b":131072}',
      AGENT_DEFAULT_MODEL: 'anthropic/house-model',
    });
    for (const model_id of ['openai/llama-3.3-70b', 'anthropic/house-model']) {
      expect(() => checkCreateRequest(extended, { prompt: 'p', config: { model_id } })).not.toThrow();
    }
    expect(
      refusal(() =>
        checkCreateRequest(config, { prompt: 'p', config: { model_id: 'openai/x' } }, 'agent_config.model_id'),
      ).detail,
    ).toMatch(/^`agent_config\.model_id`: this service does not serve the model "openai\/x"/);
  });

  test.each([
    ['max_steps', 50, 'AGENT_MAX_STEPS'],
    ['max_tokens', 2_000_000, 'AGENT_MAX_TOKENS'],
    ['idle_timeout_minutes', 1440, 'AGENT_MAX_IDLE_TIMEOUT_MINUTES'],
  ] as const)("%s may be the operator's limit (%i), not above it", (field, ceiling, variable) => {
    const limited = loadConfig({});
    expect(() => checkCreateRequest(limited, { prompt: 'p', config: { [field]: ceiling } })).not.toThrow();
    expect(refusal(() => checkCreateRequest(limited, { prompt: 'p', config: { [field]: ceiling + 1 } }))).toEqual({
      code: 'invalid_request',
      status: 400,
      detail: `\`config.${field}\` is ${ceiling + 1}, above this service's limit of ${ceiling} (${variable}); ask for at most ${ceiling}.`,
    });
  });

  test('the limits follow the configuration', () => {
    const tight = loadConfig({ AGENT_MAX_STEPS: '5' });
    expect(refusal(() => checkCreateRequest(tight, { prompt: 'p', config: { max_steps: 6 } })).detail).toContain(
      'limit of 5 (AGENT_MAX_STEPS)',
    );
  });
});

describe('decodeAttachments', () => {
  test('none is an empty list', () => {
    expect(decodeAttachments(undefined)).toEqual([]);
    expect(decodeAttachments([])).toEqual([]);
  });

  test('bytes are decoded, MIME types lower-cased, names sanitised and made unique in order', () => {
    const files = decodeAttachments([
      { file_name: 'notes.txt', mime_type: 'Text/Plain', data: Buffer.from('hello').toString('base64') },
      { file_name: '../../etc/notes.txt', mime_type: 'text/plain', data: Buffer.from([0, 255, 1]).toString('base64') },
      { file_name: '.env', mime_type: 'APPLICATION/OCTET-STREAM', data: '' },
    ]);
    expect(files).toEqual([
      { fileName: 'notes.txt', mimeType: 'text/plain', bytes: Buffer.from('hello') },
      { fileName: 'notes-2.txt', mimeType: 'text/plain', bytes: Buffer.from([0, 255, 1]) },
      { fileName: 'env', mimeType: 'application/octet-stream', bytes: Buffer.alloc(0) },
    ]);
  });
});
