/** Writes docs/configuration.md and .env.example from the declarations of core/config/ (`npm run config:docs`). */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { configDocs } from '../core/config/docs';

const root = path.resolve(__dirname, '..');
for (const file of configDocs()) {
  const target = path.join(root, file.path);
  let current: string | undefined;
  try {
    current = readFileSync(target, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === file.content) {
    process.stdout.write(`${file.path}: up to date\n`);
  } else {
    writeFileSync(target, file.content);
    process.stdout.write(`${file.path}: written\n`);
  }
}
