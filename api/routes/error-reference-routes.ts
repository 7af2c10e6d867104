import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import { isErrorCode } from '../../core/error-codes';
import { notFound } from '../../core/api-error';
import { escapeHtml, page } from '../html';

/** docs/errors.md at the repository root, from source (api/routes) or compiled code (dist/api/routes). */
export const ERROR_REFERENCE_FILE =
  [
    path.resolve(__dirname, '..', '..', 'docs', 'errors.md'),
    path.resolve(__dirname, '..', '..', '..', 'docs', 'errors.md'),
  ].find((f) => existsSync(f)) ?? path.resolve(__dirname, '..', '..', 'docs', 'errors.md');

/** Splits docs/errors.md into its `## <code>` sections. */
export function errorReferenceSections(markdown: string): Map<string, string> {
  const sections = new Map<string, string>();
  for (const part of markdown.split(/^## /m).slice(1)) {
    const newline = part.indexOf('\n');
    sections.set(part.slice(0, newline).trim(), part.slice(newline + 1).trim());
  }
  return sections;
}

/** Serves the error reference that every problem document's `type` points to. */
export function createErrorReferenceRouter(): Router {
  const markdown = readFileSync(ERROR_REFERENCE_FILE, 'utf8');
  const sections = errorReferenceSections(markdown);
  const router = new Router();
  router.get('/errors', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = page('Error reference', `<pre>${escapeHtml(markdown)}</pre>`);
  });
  router.get('/errors/:code', (ctx) => {
    const code = ctx.params.code!;
    const section = sections.get(code);
    if (!isErrorCode(code) || section === undefined) throw notFound(`No error code ${code}.`);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = page(code, `<h1>${escapeHtml(code)}</h1><pre>${escapeHtml(section)}</pre>`);
  });
  return router;
}
