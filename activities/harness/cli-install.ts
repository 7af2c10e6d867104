import { readFileSync } from 'node:fs';
import path from 'node:path';

/** An npm package installed with the service: its directory and version, or why it is not there. */
export function locatePackage(name: string): { dir: string; version: string } | { missing: string } {
  try {
    const manifest = require.resolve(`${name}/package.json`);
    const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
    // A platform package's version names its platform too (0.169.0-linux-x64): the release is what people compare.
    return { dir: path.dirname(manifest), version: version.replace(/-(linux|darwin|win32)-[a-z0-9]+$/, '') };
  } catch {
    return {
      missing: `the npm package ${name} is not installed on this worker (run \`npm ci\` in the service's directory)`,
    };
  }
}
