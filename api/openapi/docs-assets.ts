import path from 'node:path';

/** Where the files of the `swagger-ui-dist` package are (its main module would load the whole bundle). */
export const SWAGGER_UI_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/** The files `/docs/{asset}` serves: the package's, and the page's own start-up script. */
export const DOCS_ASSETS: Record<string, { type: string; file?: string }> = {
  'swagger-ui.css': { type: 'text/css; charset=utf-8', file: 'swagger-ui.css' },
  'index.css': { type: 'text/css; charset=utf-8', file: 'index.css' },
  'swagger-ui-bundle.js': { type: 'text/javascript; charset=utf-8', file: 'swagger-ui-bundle.js' },
  'favicon-32x32.png': { type: 'image/png', file: 'favicon-32x32.png' },
  'favicon-16x16.png': { type: 'image/png', file: 'favicon-16x16.png' },
  'start.js': { type: 'text/javascript; charset=utf-8' },
};
