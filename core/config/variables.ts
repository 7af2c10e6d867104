import { z } from 'zod';
import { network, sandbox } from './isolation-variables';
import { objectStore } from './object-store-variables';
import { quotas, telemetry, webhooks, workers } from './operations-variables';
import { agent, models, workspaces } from './run-variables';
import { database, service, temporal } from './service-variables';
import type { Variable } from './variable';

/** Every environment variable the service reads, under the headings of its documentation, in order. */
export const groups = [
  service,
  database,
  objectStore,
  temporal,
  models,
  agent,
  workspaces,
  sandbox,
  network,
  workers,
  webhooks,
  quotas,
  telemetry,
] as const;

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** The same variables by name (each name is in one group only: the unit test checks). */
export const variables = Object.assign({}, ...groups.map((g) => g.variables)) as UnionToIntersection<
  (typeof groups)[number]['variables']
>;

type Schemas<V extends Record<string, Variable>> = { [K in keyof V]: V[K]['schema'] };

const schemasOf = <V extends Record<string, Variable>>(vars: V): Schemas<V> =>
  Object.fromEntries(Object.entries(vars).map(([name, v]) => [name, v.schema])) as Schemas<V>;

/** The environment, parsed: one key per variable, with its default applied. */
export const envSchema = z.object(schemasOf(variables));

export type Env = z.output<typeof envSchema>;
