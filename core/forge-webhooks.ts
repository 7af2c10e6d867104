/**
 * What a forge's pull request webhook says, and whether the forge signed it: pure, so that the
 * route (api/routes/forge-webhooks-routes.ts) only reads the body and records the answer.
 * GitHub signs the raw body with HMAC-SHA256 (`X-Hub-Signature-256: sha256=<hex>`), Gitea and
 * Forgejo the same without the prefix (`X-Gitea-Signature`), GitLab sends the secret itself
 * (`X-Gitlab-Token`); every comparison takes constant time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { FORGE_KINDS, parseRepositoryUrl, type ForgeKind } from './git-forges';
import type { PullRequestStatus } from './pull-requests';

export { FORGE_KINDS as FORGE_WEBHOOK_KINDS };

/** Largest webhook body read: GitHub caps its payloads at 25 MB, but a pull request event is far below 1 MB. */
export const MAX_FORGE_WEBHOOK_BYTES = 1024 * 1024;

/** The challenge of a refused forge webhook (a 401 names one): a signature over the body, not a key. */
export const FORGE_WEBHOOK_CHALLENGE = 'Signature realm="forge-webhooks"';

type Headers = Record<string, string | string[] | undefined>;

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function hmacHex(secret: string, body: Buffer): Buffer {
  return Buffer.from(createHmac('sha256', secret).update(body).digest('hex'));
}

/** Whether `kind`'s forge signed `body` with `secret`, as its headers say. */
export function forgeSigned(kind: ForgeKind, headers: Headers, body: Buffer, secret: string): boolean {
  switch (kind) {
    case 'github': {
      const signature = header(headers, 'x-hub-signature-256') ?? '';
      return sameBytes(Buffer.from(signature.toLowerCase()), Buffer.from(`sha256=${hmacHex(secret, body).toString()}`));
    }
    case 'gitea': {
      const signature = header(headers, 'x-gitea-signature') ?? header(headers, 'x-forgejo-signature') ?? '';
      return sameBytes(Buffer.from(signature.toLowerCase()), hmacHex(secret, body));
    }
    case 'gitlab': {
      // Hashed first: equal lengths for timingSafeEqual whatever the caller sent.
      const digest = (s: string) => createHmac('sha256', 'gitlab-token').update(s).digest();
      return sameBytes(digest(header(headers, 'x-gitlab-token') ?? ''), digest(secret));
    }
  }
}

/** A pull request event: which repository (its host chooses the secret), which pull request, its status now. */
export interface ForgePullRequestEvent {
  host: string;
  owner: string;
  name: string;
  number: number;
  status: PullRequestStatus;
}

/** What a webhook body is about: a pull request's status, another event (ignored), or a body that is not the forge's. */
export type ForgeWebhookReading =
  | { kind: 'pull_request'; event: ForgePullRequestEvent }
  | { kind: 'ignored'; reason: string }
  | { kind: 'malformed'; reason: string };

const obj = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/** Reads a webhook `payload` (parsed JSON) of `kind`'s forge, whose event header is `eventName`. */
export function readForgeWebhook(
  kind: ForgeKind,
  eventName: string | undefined,
  payload: unknown,
): ForgeWebhookReading {
  const body = obj(payload);
  if (!body) return { kind: 'malformed', reason: 'the body is not a JSON object' };
  return kind === 'gitlab' ? readGitlab(eventName, body) : readGithubLike(eventName, body);
}

/** GitHub's and Gitea's `pull_request` event (Gitea copies GitHub's shape). */
function readGithubLike(eventName: string | undefined, body: Record<string, unknown>): ForgeWebhookReading {
  if (eventName !== 'pull_request') return { kind: 'ignored', reason: `event ${eventName ?? '(none)'}` };
  const pull = obj(body.pull_request);
  const repository = obj(body.repository);
  const at = parseRepositoryUrl(String(repository?.html_url ?? ''));
  const number = pull?.number;
  if (!pull || !at || typeof number !== 'number' || !['open', 'closed'].includes(String(pull.state))) {
    return {
      kind: 'malformed',
      reason: 'a pull_request event needs pull_request.number, .state and repository.html_url',
    };
  }
  const status: PullRequestStatus = pull.merged
    ? 'merged'
    : pull.state === 'closed'
      ? 'closed'
      : pull.draft === true
        ? 'draft'
        : 'open';
  return { kind: 'pull_request', event: { host: at.host, owner: at.owner, name: at.name, number, status } };
}

const GITLAB_STATES: Record<string, PullRequestStatus> = {
  opened: 'open',
  closed: 'closed',
  locked: 'closed',
  merged: 'merged',
};

/** GitLab's `Merge Request Hook`. */
function readGitlab(eventName: string | undefined, body: Record<string, unknown>): ForgeWebhookReading {
  if (eventName !== 'Merge Request Hook') return { kind: 'ignored', reason: `event ${eventName ?? '(none)'}` };
  const attributes = obj(body.object_attributes);
  const at = parseRepositoryUrl(String(obj(body.project)?.web_url ?? ''));
  const iid = attributes?.iid;
  const state = GITLAB_STATES[String(attributes?.state)];
  if (!attributes || !at || typeof iid !== 'number' || !state) {
    return {
      kind: 'malformed',
      reason: 'a Merge Request Hook needs object_attributes.iid, .state and project.web_url',
    };
  }
  const draft = attributes.draft === true || attributes.work_in_progress === true;
  const status: PullRequestStatus = state === 'open' && draft ? 'draft' : state;
  return { kind: 'pull_request', event: { host: at.host, owner: at.owner, name: at.name, number: iid, status } };
}

/** The header that names a forge's event. */
export function forgeEventName(kind: ForgeKind, headers: Headers): string | undefined {
  switch (kind) {
    case 'github':
      return header(headers, 'x-github-event');
    case 'gitea':
      return header(headers, 'x-gitea-event') ?? header(headers, 'x-forgejo-event');
    case 'gitlab':
      return header(headers, 'x-gitlab-event');
  }
}

/** The host of the repository a webhook body names (its secret is that host's); undefined when it names none. */
export function webhookHost(kind: ForgeKind, payload: unknown): string | undefined {
  const body = obj(payload);
  const url = kind === 'gitlab' ? obj(body?.project)?.web_url : obj(body?.repository)?.html_url;
  return parseRepositoryUrl(String(url ?? ''))?.host;
}
