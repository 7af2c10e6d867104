import { z } from 'zod';

/**
 * A process that reads a variable: the API, the workers, or `npm start` for its own part (the
 * embedded PostgreSQL and Temporal dev server it runs, and what it prints); `npm start` also
 * runs an API and a worker, so it reads everything they do.
 */
export type Reader = 'API' | 'workers' | 'npm start' | 'operator commands';

/** One environment variable: how it parses (with its default), what it means, and who reads it. */
export interface Variable<S extends z.ZodType = z.ZodType> {
  /** Parses the raw value (never empty: an empty variable is unset); its default is the variable's. */
  schema: S;
  /** One line, Markdown; its range and readers are added when it is shown. */
  description: string;
  readBy: readonly Reader[];
  /** Markdown shown as the default of a variable whose schema has none (unset, or computed from others). */
  unset?: string;
}

/** A heading of the documentation, and the variables under it. */
export interface Group<V extends Record<string, Variable> = Record<string, Variable>> {
  title: string;
  variables: V;
}

export const group = <V extends Record<string, Variable>>(title: string, variables: V): Group<V> => ({
  title,
  variables,
});

// Parsers the declarations share.

/** A string whose blank value is unset; trimmed. */
export const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

export const optionalUrl = optionalString.pipe(z.url().optional());

/** A whole number from `min` to `max`, `def` when unset. */
export const intFrom = (def: number, min: number, max: number) =>
  z.coerce.number().int().min(min).max(max).default(def);

/** The value a variable takes when unset, or undefined when its schema has none. */
export function defaultOf(variable: Variable): unknown {
  const parsed = variable.schema.safeParse(undefined);
  return parsed.success ? parsed.data : undefined;
}

/** The bounds of a numeric variable, as its schema checks them. */
export function rangeOf(variable: Variable): { min: number; max: number } | undefined {
  let schema: unknown = variable.schema;
  if (schema instanceof z.ZodDefault) schema = schema.unwrap();
  if (!(schema instanceof z.ZodNumber) || schema.minValue === null || schema.maxValue === null) return undefined;
  return { min: schema.minValue, max: schema.maxValue };
}
