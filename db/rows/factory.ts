/** A row of `factories`, as API factories (db/factories.ts) and file factories (db/file-factories.ts) read and make it. */
import { randomBytes } from 'node:crypto';

/** Where a factory is defined: through the API, or in a FACTORY.md of an environment's repository. */
export type FactorySource =
  { type: 'API' } | { type: 'FILE'; environment_id: string; repository: string; path: string };

export interface Factory {
  uid: string;
  teamId: string;
  name: string;
  description: string | null;
  environmentId: string | null;
  /** What every agent of the factory is told besides its own prompt (a FACTORY.md's body). */
  instructions: string | null;
  source: FactorySource;
  createdAt: Date;
  updatedAt: Date;
}

export const FACTORY_COLUMNS =
  'uid, team_id, name, description, environment_id, instructions, source, created_at, updated_at';

export function toFactory(r: Record<string, unknown>): Factory {
  return {
    uid: r.uid as string,
    teamId: r.team_id as string,
    name: r.name as string,
    description: (r.description as string | null) ?? null,
    environmentId: (r.environment_id as string | null) ?? null,
    instructions: (r.instructions as string | null) ?? null,
    source: r.source as FactorySource,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
  };
}

/** A factory uid: `fac_` and 96 random bits, URL-safe. */
export function newFactoryUid(): string {
  return `fac_${randomBytes(12).toString('base64url')}`;
}

/** Where a FILE factory is defined, as a person would look for it: `owner/repo:path`. */
export function factoryFileLabel(source: Extract<FactorySource, { type: 'FILE' }>): string {
  return `${source.repository}:${source.path}`;
}
