import { stringArg, ToolInputError } from './tool-arguments';
import type { ToolContext, ToolOutcome } from './tool-types';

export async function editFile(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome> {
  const file = stringArg(args, 'path');
  const oldText = stringArg(args, 'old_text');
  const newText = stringArg(args, 'new_text');
  if (!oldText) throw new ToolInputError('`old_text` must not be empty; use write_file to create a file');
  const text = await ctx.files.read(file);
  const count = text.split(oldText).length - 1;
  if (count === 0) return { output: `old_text was not found in ${args.path as string}.`, isError: true };
  if (count > 1 && args.replace_all !== true) {
    return {
      output: `old_text occurs ${count} times in ${args.path as string}; add context or set replace_all.`,
      isError: true,
    };
  }
  await ctx.files.write(
    file,
    args.replace_all === true ? text.split(oldText).join(newText) : text.replace(oldText, () => newText),
  );
  return {
    output: `Replaced ${args.replace_all === true ? count : 1} occurrence(s) in ${args.path as string}.`,
    isError: false,
  };
}
