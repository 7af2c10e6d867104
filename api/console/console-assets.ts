import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** A file the console serves under /console/assets/. */
export interface ConsoleAsset {
  type: string;
  body: Buffer;
  etag: string;
}

/**
 * api/console/assets at the repository root, from source (api/console) or compiled code
 * (dist/api/console): the browser's files are plain ES modules and a style sheet, served as
 * they are written (the Dockerfile copies them beside dist/).
 */
const ASSETS_DIR =
  [path.resolve(__dirname, 'assets'), path.resolve(__dirname, '..', '..', '..', 'api', 'console', 'assets')].find(
    (dir) => existsSync(dir),
  ) ?? path.resolve(__dirname, 'assets');

/** The event stream parser the CLI uses too, as the ES modules of its package (it has no dependencies). */
const PARSER_DIR = path.join(path.dirname(require.resolve('eventsource-parser/package.json')), 'dist');

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

function asset(file: string): ConsoleAsset {
  const body = readFileSync(file);
  const type = TYPES[path.extname(file)];
  if (!type) throw new Error(`The console serves no file of type ${path.extname(file)} (${file}).`);
  return { type, body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
}

/** The console's own files under /console/assets/ (api/console/assets), each served as written. */
export const CONSOLE_FILES = [
  'console.css',
  'api.js',
  'sign-in.js',
  'runs.js',
  'run.js',
  'transcript.js',
  'event-stream.js',
  'lists.js',
] as const;

/** The parser's modules, under /console/assets/vendor/eventsource-parser/. */
export const PARSER_FILES = ['index.js', 'stream.js'] as const;

/** Every file of the console by its path under /console/assets/, read once when the router is made. */
export function loadConsoleAssets(): Map<string, ConsoleAsset> {
  const assets = new Map<string, ConsoleAsset>();
  for (const name of CONSOLE_FILES) assets.set(name, asset(path.join(ASSETS_DIR, name)));
  for (const name of PARSER_FILES) assets.set(`vendor/eventsource-parser/${name}`, asset(path.join(PARSER_DIR, name)));
  return assets;
}
