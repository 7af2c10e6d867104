/**
 * Forges' webhook signatures and pull request events. GitHub's signature is checked against the
 * test vector GitHub publishes ("Validating webhook deliveries"); the payloads are trimmed to the
 * fields read, shaped as GitHub's published examples (octokit/webhooks payload-examples) and
 * GitLab's documented Merge Request Hook: written from those documents, not recorded from a live
 * GitHub or GitLab. Gitea's are checked live in test/forge-webhooks.test.ts.
 */
import { createHmac } from 'node:crypto';
import { forgeSigned, readForgeWebhook, webhookHost } from '../../core/forge-webhooks';
import { parseForgeWebhookSecrets } from '../../core/config/parsers';

const githubPull = (pull: Record<string, unknown>, action = 'closed') => ({
  action,
  number: 2,
  pull_request: { number: 2, state: 'open', merged: false, draft: false, ...pull },
  repository: { full_name: 'Codertocat/Hello-World', html_url: 'https://github.com/Codertocat/Hello-World' },
});

const gitlabMerge = (attributes: Record<string, unknown>) => ({
  object_kind: 'merge_request',
  event_type: 'merge_request',
  project: { path_with_namespace: 'group/sub/project', web_url: 'https://gitlab.example.com/group/sub/project' },
  object_attributes: { iid: 7, state: 'opened', draft: false, action: 'open', ...attributes },
});

describe('signatures', () => {
  test("GitHub's published test vector verifies; another secret, another body or no header does not", () => {
    const body = Buffer.from('Hello, World!');
    const headers = {
      'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
    };
    expect(forgeSigned('github', headers, body, "It's a Secret to Everybody")).toBe(true);
    expect(forgeSigned('github', headers, body, "It's a secret to everybody")).toBe(false);
    expect(forgeSigned('github', headers, Buffer.from('Hello, World?'), "It's a Secret to Everybody")).toBe(false);
    expect(forgeSigned('github', {}, body, "It's a Secret to Everybody")).toBe(false);
    // The bare hex (Gitea's form) is not GitHub's: the prefix is part of what is compared.
    const bare = { 'x-hub-signature-256': headers['x-hub-signature-256'].slice('sha256='.length) };
    expect(forgeSigned('github', bare, body, "It's a Secret to Everybody")).toBe(false);
  });

  test("Gitea's hex HMAC-SHA256 of the raw body verifies (Forgejo's header too); a truncated one does not", () => {
    const body = Buffer.from(JSON.stringify(githubPull({})));
    const hex = createHmac('sha256', 'gitea-secret-0123456789').update(body).digest('hex');
    expect(forgeSigned('gitea', { 'x-gitea-signature': hex }, body, 'gitea-secret-0123456789')).toBe(true);
    expect(forgeSigned('gitea', { 'x-forgejo-signature': hex }, body, 'gitea-secret-0123456789')).toBe(true);
    expect(forgeSigned('gitea', { 'x-gitea-signature': hex.slice(0, 63) }, body, 'gitea-secret-0123456789')).toBe(
      false,
    );
    expect(forgeSigned('gitea', { 'x-gitea-signature': hex }, body, 'another-secret-0123456789')).toBe(false);
  });

  test("GitLab's token must equal the secret exactly", () => {
    const body = Buffer.from('{}');
    expect(
      forgeSigned('gitlab', { 'x-gitlab-token': 'gitlab-secret-0123456789' }, body, 'gitlab-secret-0123456789'),
    ).toBe(true);
    expect(
      forgeSigned('gitlab', { 'x-gitlab-token': 'gitlab-secret-012345678' }, body, 'gitlab-secret-0123456789'),
    ).toBe(false);
    expect(forgeSigned('gitlab', {}, body, 'gitlab-secret-0123456789')).toBe(false);
  });
});

describe('pull request events', () => {
  test.each([
    ['opened', { state: 'open' }, 'open'],
    ['closed without merging', { state: 'closed' }, 'closed'],
    ['merged', { state: 'closed', merged: true }, 'merged'],
    ['reopened', { state: 'open' }, 'open'],
    ['converted to draft', { state: 'open', draft: true }, 'draft'],
    ['ready for review', { state: 'open', draft: false }, 'open'],
  ])('GitHub: %s', (_, pull, status) => {
    expect(readForgeWebhook('github', 'pull_request', githubPull(pull))).toEqual({
      kind: 'pull_request',
      event: { host: 'github.com', owner: 'Codertocat', name: 'Hello-World', number: 2, status },
    });
  });

  test.each([
    ['opened', { state: 'opened' }, 'open'],
    ['a draft', { state: 'opened', draft: true }, 'draft'],
    ['a draft (older GitLab: work_in_progress)', { state: 'opened', work_in_progress: true }, 'draft'],
    ['merged', { state: 'merged' }, 'merged'],
    ['closed', { state: 'closed' }, 'closed'],
    ['locked', { state: 'locked' }, 'closed'],
  ])('GitLab: %s', (_, attributes, status) => {
    expect(readForgeWebhook('gitlab', 'Merge Request Hook', gitlabMerge(attributes))).toEqual({
      kind: 'pull_request',
      event: { host: 'gitlab.example.com', owner: 'group/sub', name: 'project', number: 7, status },
    });
  });

  test('other events are ignored; a pull request event without its fields is malformed', () => {
    expect(readForgeWebhook('github', 'ping', { zen: 'Keep it logically awesome.' })).toMatchObject({
      kind: 'ignored',
    });
    expect(readForgeWebhook('gitlab', 'Push Hook', gitlabMerge({}))).toMatchObject({ kind: 'ignored' });
    expect(readForgeWebhook('gitea', 'pull_request', { action: 'closed' })).toMatchObject({ kind: 'malformed' });
    expect(readForgeWebhook('github', 'pull_request', [])).toMatchObject({ kind: 'malformed' });
    expect(readForgeWebhook('github', 'pull_request', githubPull({ state: 'weird' }))).toMatchObject({
      kind: 'malformed',
    });
  });

  test("the secret is chosen by the repository's host, in lower case", () => {
    expect(webhookHost('github', githubPull({}))).toBe('github.com');
    expect(webhookHost('gitlab', gitlabMerge({}))).toBe('gitlab.example.com');
    expect(webhookHost('gitea', { repository: { html_url: 'http://Git.Example.com:3000/o/r' } })).toBe(
      'git.example.com:3000',
    );
    expect(webhookHost('gitea', { repository: {} })).toBeUndefined();
  });
});

describe('FORGE_WEBHOOK_SECRETS', () => {
  test('host=secret pairs, hosts in lower case, a secret may hold = (base64)', () => {
    expect(parseForgeWebhookSecrets('GitHub.com=abcdefghijklmnop==, git.local:3000=0123456789abcdef')).toEqual({
      'github.com': 'abcdefghijklmnop==',
      'git.local:3000': '0123456789abcdef',
    });
    expect(parseForgeWebhookSecrets(undefined)).toEqual({});
  });

  test.each([
    'github.com',
    'github.com=short',
    '=0123456789abcdef',
    'a b=0123456789abcdef',
    'h=0123456789abcdef,h=0123456789abcdef',
  ])('refuses %s without echoing the secret', (raw) => {
    expect(() => parseForgeWebhookSecrets(raw)).toThrow(/FORGE_WEBHOOK_SECRETS/);
    try {
      parseForgeWebhookSecrets(raw);
    } catch (err) {
      expect((err as Error).message).not.toContain('0123456789abcdef');
    }
  });
});
