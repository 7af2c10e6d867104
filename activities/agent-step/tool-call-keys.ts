export const assistantEventKey = (turn: number, step: number) => `assistant-t${turn}-s${step}`;

/** Transcript keys of the calls of one step: by turn, step and position. */
export function toolCallKeys(turn: number, step: number, index: number) {
  const at = `t${turn}-s${step}-c${index}`;
  return { started: `tool-started-${at}`, result: `tool-${at}`, skill: `skill-${at}` };
}
