export const PLAN_MODE_NOTE =
  '[Plan mode: work out a plan for this request and answer with it. Read whatever you need, but do not change files or run commands that change anything; the user will ask you to carry the plan out.]';

/** A message sent in plan mode (`mode: "plan"` on create or follow-up) carries the instruction. */
export function inMode(mode: unknown, text: string): string {
  return mode === 'plan' ? `${PLAN_MODE_NOTE}\n\n${text}` : text;
}
