import { readFileSync } from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import { notFound } from '../../core/api-error';
import { DOCS_ASSETS, SWAGGER_UI_DIR } from '../openapi/docs-assets';
import { openApiDocument, type OpenApiLimits } from '../openapi/document';
import { rejectQueryParameters } from '../validate';

export const OPENAPI_PATH = '/api/v1/openapi.json';

/** The page's own script: no inline script, so the page's CSP can allow scripts from 'self' only. */
const START_SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(OPENAPI_PATH)},
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent runs service: API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="stylesheet" href="/docs/index.css">
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="/docs/favicon-16x16.png" sizes="16x16">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/start.js"></script>
</body>
</html>
`;

/**
 * Scripts, styles and the document from this origin only: nothing from a CDN, so the page works
 * offline. Swagger UI sets `style` attributes (hence 'unsafe-inline' for styles, never for
 * scripts) and shows images given as data: URLs.
 */
const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** `GET /api/v1/openapi.json` (no key needed) and the API reference page at `/docs`, from `swagger-ui-dist`. */
export function createOpenApiRouter(limits: OpenApiLimits): Router {
  const router = new Router();
  const files = new Map<string, Buffer>();
  const asset = (name: string): Buffer | undefined => {
    const entry = DOCS_ASSETS[name];
    if (!entry) return undefined;
    let bytes = files.get(name);
    if (!bytes) {
      bytes = entry.file ? readFileSync(path.join(SWAGGER_UI_DIR, entry.file)) : Buffer.from(START_SCRIPT);
      files.set(name, bytes);
    }
    return bytes;
  };

  router.get(OPENAPI_PATH, (ctx) => {
    rejectQueryParameters(ctx.query);
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = openApiDocument(limits);
  });

  router.get('/docs', (ctx) => {
    ctx.set('Content-Security-Policy', DOCS_CSP);
    ctx.set('Cache-Control', 'no-cache');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });

  router.get('/docs/:asset', (ctx) => {
    const name = ctx.params.asset!;
    const bytes = Object.prototype.hasOwnProperty.call(DOCS_ASSETS, name) ? asset(name) : undefined;
    if (!bytes) throw notFound(`No file ${name} in the API reference.`);
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.type = DOCS_ASSETS[name]!.type;
    ctx.body = bytes;
  });
  return router;
}
