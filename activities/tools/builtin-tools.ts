import { OPEN_PULL_REQUEST_TOOL } from '../../core/pull-request-tool';
import { RunDiskLimitError } from '../sandbox/run-disk';
import { editFile } from './edit-file-tool';
import { runCommand } from './run-command-tool';
import { capText } from './output-capture';
import { numberArg, relativeName, stringArg } from './tool-arguments';
import type { ToolContext, ToolOutcome } from './tool-types';
import { traceToolCall } from './traced-tool-call';
import { uploadArtifact } from './upload-artifact-tool';
import { reportExternalReference } from './external-reference-tool';
import { submitPlan } from './submit-plan-tool';
import { openPullRequest } from './open-pull-request-tool';

export type { AdvertisedSkill, ArtifactUpload, ToolContext, ToolOutcome } from './tool-types';
export { BUILTIN_TOOL_NAMES, BUILTIN_TOOLS } from './builtin-tool-specs';
export { MAX_ARTIFACT_BYTES } from './upload-artifact-tool';

/** Runs one built-in tool; errors the model can act on come back as outcomes, not exceptions. */
export function runBuiltinTool(name: string, args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  return traceToolCall(name, 'builtin', () => runTool(name, args, ctx));
}

async function runTool(name: string, args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  try {
    switch (name) {
      case 'run_command':
        return await runCommand(args, ctx);
      case 'read_file': {
        const text = await ctx.files.read(stringArg(args, 'path'));
        const start = numberArg(args, 'start_line');
        const end = numberArg(args, 'end_line');
        const selected =
          start || end
            ? text
                .split('\n')
                .slice((start ?? 1) - 1, end)
                .join('\n')
            : text;
        return { output: capText(selected, ctx.outputLimitBytes), isError: false };
      }
      case 'write_file': {
        const file = stringArg(args, 'path');
        const bytes = await ctx.files.write(file, stringArg(args, 'content'));
        await ctx.disk?.check();
        return { output: `Wrote ${bytes} bytes to ${relativeName(ctx, file)}.`, isError: false };
      }
      case 'edit_file': {
        const outcome = await editFile(args, ctx);
        await ctx.disk?.check();
        return outcome;
      }
      case 'list_directory': {
        const entries = (await ctx.files.list(stringArg(args, 'path', false)))
          .filter((e) => e.name !== '.git')
          .map((e) => (e.dir ? `${e.name}/` : e.name))
          .sort();
        return { output: entries.length ? entries.join('\n') : '(empty directory)', isError: false };
      }
      case 'ask_user':
        // A question is answered through the run's approvals (agent-step/approval-gate.ts): only one without text gets here.
        return { output: 'ask_user needs a non-empty `question`.', isError: true };
      case 'upload_artifact':
        return await uploadArtifact(args, ctx);
      case 'report_external_reference':
        return await reportExternalReference(args, ctx);
      case 'submit_plan':
        return await submitPlan(args, ctx);
      case OPEN_PULL_REQUEST_TOOL:
        return await openPullRequest(args, ctx);
      case 'read_skill': {
        const wanted = stringArg(args, 'name');
        const skill = ctx.skills.find(
          (s) => s.name === wanted || ('bundled_skill_id' in s.source && s.source.bundled_skill_id === wanted),
        );
        if (!skill) {
          return {
            output: `No skill named ${wanted}. Available: ${ctx.skills.map((s) => s.name).join(', ') || 'none'}.`,
            isError: true,
          };
        }
        return { output: skill.content, isError: false, skillLoad: skill.source };
      }
      default:
        return { output: `Unknown tool ${name}.`, isError: true };
    }
  } catch (err) {
    // A limit of the run ends it; the model is not asked to work around it.
    if (ctx.signal.aborted || err instanceof RunDiskLimitError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    return { output: `${name} failed: ${message}`, isError: true };
  }
}
