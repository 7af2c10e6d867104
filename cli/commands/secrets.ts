import Table from 'cli-table3';
import type { CommandContext } from '../context';
import { EXIT_CODES, UsageError } from '../exit-codes';
import { readSecretValue } from '../secret-input';
import { oneLine } from '../terminal-text';
import type { ListSecretsResponse, SecretItem } from '../wire';
import { shortTime } from './list';

export interface SecretSetOptions {
  kind?: string;
  description?: string;
}

const secretPath = (name: string) => `/agent/secrets/${encodeURIComponent(name)}`;

/**
 * `agent-runs secrets set <name>`: stores the secret (or replaces the value of the one of that
 * name) with the value typed at a prompt that does not echo it, or piped in on stdin.
 */
export async function secretsSetCommand(ctx: CommandContext, name: string, options: SecretSetOptions): Promise<number> {
  const value = await readSecretValue(`Value of secret ${name} (not shown): `);
  if (value === '') {
    throw new UsageError(
      `No value for secret ${name}: type it at the prompt, or pipe it in, e.g. \`printenv ANTHROPIC_API_KEY | agent-runs secrets set ${name}\`.`,
    );
  }
  // Storing twice stores the same thing: safe to retry after a lost answer.
  const { status, body } = await ctx.client.exchange<SecretItem>('POST', '/agent/secrets', {
    body: {
      name,
      value,
      ...(options.kind !== undefined ? { kind: options.kind } : {}),
      ...(options.description !== undefined ? { description: options.description } : {}),
    },
    retries: 2,
  });
  const { out } = ctx;
  if (out.json) out.document(body);
  out.text(body.name);
  out.note(`${status === 201 ? 'Stored' : 'Replaced'} secret ${body.name} (${body.kind}).`);
  return EXIT_CODES.ok;
}

export function secretsTable(secrets: SecretItem[], color: boolean): string {
  const table = new Table({
    head: ['NAME', 'KIND', 'DESCRIPTION', 'UPDATED'],
    style: { head: color ? ['bold'] : [], border: color ? ['grey'] : [] },
  });
  for (const s of secrets) table.push([s.name, s.kind, oneLine(s.description ?? '', 48), shortTime(s.updated_at)]);
  return table.toString();
}

/** `agent-runs secrets list`: every secret of the team (all pages), by name; never a value. */
export async function secretsListCommand(ctx: CommandContext): Promise<number> {
  const secrets: SecretItem[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await ctx.client.get<ListSecretsResponse>('/agent/secrets', { cursor });
    secrets.push(...page.secrets);
    if (!page.page_info.has_next_page || !page.page_info.next_cursor) break;
    cursor = page.page_info.next_cursor;
  }
  const { out } = ctx;
  if (out.json) out.document({ secrets, page_info: { has_next_page: false } });
  else if (secrets.length === 0) out.note('Your team has no secrets. Store one with: agent-runs secrets set <name>');
  else out.text(secretsTable(secrets, out.color));
  return EXIT_CODES.ok;
}

/** `agent-runs secrets delete <name>`: deletes the secret; runs that name it fail their next turn. */
export async function secretsDeleteCommand(ctx: CommandContext, name: string): Promise<number> {
  await ctx.client.request<undefined>('DELETE', secretPath(name));
  const { out } = ctx;
  if (out.json) out.document({ name, deleted: true });
  out.text(name);
  out.note(`Deleted secret ${name}.`);
  return EXIT_CODES.ok;
}
