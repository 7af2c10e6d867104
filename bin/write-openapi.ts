/** Writes the OpenAPI document, as `GET /api/v1/openapi.json` serves it, to a file (default openapi.json). */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { openApiDocument, openApiLimits } from '../api/openapi/document';
import { loadConfig } from '../core/config';

const file = process.argv[2] ?? 'openapi.json';
// The limits of a service configured like this process (the defaults, unless the environment says otherwise).
mkdirSync(path.dirname(file), { recursive: true });
writeFileSync(file, `${JSON.stringify(openApiDocument(openApiLimits(loadConfig(process.env))), null, 2)}\n`);
process.stdout.write(`${file}\n`);
