import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { z } from '../../core/schemas/zod';
import { CONSOLE_FILES, PARSER_FILES } from '../console/console-assets';
import { registerOperation, type Operation } from './common';

const SHELL =
  "A page of the web console (docs/guide/console.md) for a browser: HTML without data, and a script of the console that reads the API with the key the person signed in with (kept in the tab's sessionStorage, sent as `Authorization: Bearer`). Served with a strict Content-Security-Policy (`script-src 'self'`, no inline script or style, no framing).";

const page = (path: string, operationId: string, summary: string, extra: { params?: z.ZodObject } = {}): Operation => ({
  method: 'get',
  path,
  operationId,
  summary,
  description: SHELL,
  tags: ['Console'],
  auth: false,
  ...extra,
  responses: [{ status: 200, description: 'The page.', contentType: 'text/html', schema: z.string() }],
});

const file = (description: string) => ({
  status: 200 as const,
  description,
  contentType: '*/*',
  schema: z.string().openapi({ format: 'binary' }),
});

/** The web console's pages and files: open (the pages hold no data; the API calls they make take the key). */
export function registerConsoleOperations(registry: OpenAPIRegistry): void {
  registerOperation(registry, {
    method: 'get',
    path: '/console',
    operationId: 'getConsole',
    summary: 'The web console: to its runs list',
    tags: ['Console'],
    auth: false,
    responses: [
      {
        status: 302,
        description: 'To `console/runs`.',
        headers: { Location: { description: '`console/runs` (relative).', schema: { type: 'string' } } },
      },
    ],
  });
  registerOperation(registry, page('/console/sign-in', 'getConsoleSignIn', 'Console: sign in with an API key'));
  registerOperation(registry, page('/console/runs', 'getConsoleRuns', "Console: the team's runs, live"));
  registerOperation(registry, {
    ...page('/console/runs/{runId}', 'getConsoleRun', 'Console: a run, its live transcript and its controls', {
      params: z.object({ runId: z.string().openapi({ param: { description: 'The run id (a UUID).' } }) }),
    }),
    errors: [404],
  });
  registerOperation(registry, page('/console/schedules', 'getConsoleSchedules', "Console: the team's schedules"));
  registerOperation(registry, page('/console/agents', 'getConsoleAgents', "Console: the team's agent identities"));
  registerOperation(registry, {
    method: 'get',
    path: '/console/assets/{file}',
    operationId: 'getConsoleAsset',
    summary: 'A script or the style sheet of the console',
    tags: ['Console'],
    auth: false,
    params: z.object({ file: z.enum(CONSOLE_FILES) }),
    responses: [file('The file (`ETag`; `If-None-Match` answers 304).')],
    errors: [404],
  });
  registerOperation(registry, {
    method: 'get',
    path: '/console/assets/vendor/eventsource-parser/{file}',
    operationId: 'getConsoleParserModule',
    summary: 'A module of eventsource-parser, which the console reads event streams with',
    tags: ['Console'],
    auth: false,
    params: z.object({ file: z.enum(PARSER_FILES) }),
    responses: [file('The module.')],
    errors: [404],
  });
}
