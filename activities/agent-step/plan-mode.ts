import { MAX_PLAN_CHARS, SUBMIT_PLAN_TOOL } from '../tools/submit-plan-tool';

export const PLAN_MODE_NOTE =
  '[Plan mode: work out a plan for this request and submit it with the submit_plan tool (a title and the plan in markdown; without that tool, answer with the plan); that ends your turn. Read whatever you need, but do not change files or run commands that change anything. The user will approve the plan or ask for changes.]';

/** What the first message after a plan, in normal mode, tells the model. */
export const PLAN_APPROVED_NOTE =
  '[Plan mode is over: the user has read your plan. Carry it out now, with the changes this message asks for, if any; you may change files and run commands again.]';

/** The mode a message was sent in (`mode` of a create or a follow-up): plan, or anything else. */
export type MessageMode = 'plan' | 'normal';

export function messageMode(mode: unknown): MessageMode {
  return mode === 'plan' ? 'plan' : 'normal';
}

/**
 * A message as the model sees it: one sent in plan mode carries the plan-mode instruction; the
 * first one in normal mode after a plan-mode message says that the plan may now be carried out.
 */
export function inMode(mode: unknown, text: string, afterPlan = false): string {
  if (messageMode(mode) === 'plan') return `${PLAN_MODE_NOTE}\n\n${text}`;
  return afterPlan ? `${PLAN_APPROVED_NOTE}\n\n${text}` : text;
}

/**
 * The tools a turn in plan mode may call: those that only read, `ask_user` and `submit_plan`.
 * Everything else (writing files, commands, MCP servers, uploads, delegation) is refused: the
 * command sandbox binds the workspace read-write for the whole run, so a command could change
 * files however it is worded.
 */
export const PLAN_MODE_TOOLS: ReadonlySet<string> = new Set([
  'read_file',
  'list_directory',
  'read_skill',
  'ask_user',
  'validate_factory_file',
  SUBMIT_PLAN_TOOL,
]);

/** What the model is told of a call plan mode refuses (undefined: the call may run). */
export function planModeRefusal(mode: MessageMode, tool: string): string | undefined {
  if (mode !== 'plan' || PLAN_MODE_TOOLS.has(tool)) return undefined;
  return `Refused in plan mode: ${tool} may change things, and nothing changes until the user approves the plan. In plan mode you may read (read_file, list_directory, read_skill), ask_user, and submit_plan.`;
}

/**
 * A final answer taken as the plan (a plan-mode turn that ended without submit_plan): its first
 * line, without a heading's `#`s, is the title. Undefined for an answer without text.
 */
export function planFromAnswer(text: string): { title: string; markdown: string } | undefined {
  const markdown = text.trim();
  if (!markdown) return undefined;
  const firstLine = markdown
    .split('\n', 1)[0]!
    .replace(/^#+\s*/, '')
    .trim();
  const title = firstLine.length > 200 ? `${firstLine.slice(0, 199)}…` : firstLine || 'Plan';
  return { title, markdown: markdown.length > MAX_PLAN_CHARS ? `${markdown.slice(0, MAX_PLAN_CHARS - 1)}…` : markdown };
}
