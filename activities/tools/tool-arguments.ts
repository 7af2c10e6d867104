import path from 'node:path';
import type { ToolContext } from './tool-types';

export class ToolInputError extends Error {}

export function stringArg(args: Record<string, unknown>, name: string, required = true): string {
  const value = args[name];
  if (value === undefined && !required) return '';
  if (typeof value !== 'string') throw new ToolInputError(`\`${name}\` must be a string`);
  return value;
}

export function numberArg(args: Record<string, unknown>, name: string): number | undefined {
  const value = args[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new ToolInputError(`\`${name}\` must be a number`);
  return value;
}

export function optionalText(args: Record<string, unknown>, name: string, max: number): string | undefined {
  const value = args[name];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new ToolInputError(`\`${name}\` must be a string`);
  if (value.length > max) throw new ToolInputError(`\`${name}\` is at most ${max} characters`);
  // PostgreSQL text cannot hold NUL.
  return value.replace(/\u0000/g, '');
}

/** A path the model gave, relative to the workspace root; undefined when it points outside. */
export function workspaceRelative(ctx: ToolContext, requested: string): string | undefined {
  const root = ctx.processes.workspacePath;
  const absolute = path.posix.resolve(root, requested);
  if (absolute !== root && !absolute.startsWith(`${root}/`)) return undefined;
  return path.posix.relative(root, absolute);
}

export function relativeName(ctx: ToolContext, requested: string): string {
  return workspaceRelative(ctx, requested) ?? requested;
}
