import { existsSync, mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  createApprovalHookDir,
  removeStaleApprovalHookDirs,
  STALE_HOOK_DIR_MS,
} from '../../activities/harness/approval-hook-dir';

let root: string;
beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'hook-dirs-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

test("a dead worker's hook directory goes once it is older than any invocation; a live one's stays", async () => {
  const dead = await createApprovalHookDir(root);
  const live = await createApprovalHookDir(root);
  await dead.write({ 'settings.json': '{}' });
  const longAgo = new Date(Date.now() - STALE_HOOK_DIR_MS - 60_000);
  utimesSync(dead.dir, longAgo, longAgo);

  expect(await removeStaleApprovalHookDirs(root)).toBe(1);
  expect(existsSync(dead.dir)).toBe(false);
  expect(existsSync(live.dir)).toBe(true);
  expect(await removeStaleApprovalHookDirs(root)).toBe(0);
});

test('a workspace root without hook directories is nothing to do', async () => {
  expect(await removeStaleApprovalHookDirs(root)).toBe(0);
});
