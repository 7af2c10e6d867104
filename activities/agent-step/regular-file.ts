import { lstatSync } from 'node:fs';

/** lstat only: the worker never follows a link the run planted. */
export function isRegularFile(file: string): boolean {
  try {
    return lstatSync(file).isFile();
  } catch {
    return false;
  }
}
