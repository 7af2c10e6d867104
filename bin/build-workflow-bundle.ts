import { writeFile } from 'node:fs/promises';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_BUNDLE_PATH } from '../worker/create-worker';
import { workflowSources } from '../worker/workflow-sources';

/** Writes the workflow bundle next to the compiled worker so production workers skip bundling. */
async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode(workflowSources());
  await writeFile(WORKFLOW_BUNDLE_PATH, code);
  process.stdout.write(`Workflow bundle written to ${WORKFLOW_BUNDLE_PATH}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
