import picomatch from 'picomatch';

/**
 * `config.approval`: which of the agent's calls wait for a person. A `run_command` whose whole
 * command line matches one of `commands`, or any call whose tool name matches one of `tools`,
 * waits for a decision; after `timeout_minutes` it is denied as timed out.
 */
export interface ApprovalPolicy {
  commands?: string[];
  tools?: string[];
  timeout_minutes?: number;
}

/** How long a call waits for a decision when no policy says. */
export const DEFAULT_APPROVAL_TIMEOUT_MINUTES = 1440;

/** The built-in tool whose `command` argument `commands` globs are matched against. */
export const COMMAND_TOOL = 'run_command';

/**
 * Globs as a shell user reads them: `*` and `?` match any character, `/`, spaces and newlines
 * included (bash's rules, and the `s` flag), and a leading dot needs no special pattern.
 */
const GLOB_OPTIONS: picomatch.PicomatchOptions = { bash: true, dot: true, flags: 's' };

/**
 * The stricter of several policies (a run's own, its agent identity's, its environment's): every
 * glob of each, and the shortest timeout. Undefined when none says anything.
 */
export function mergeApprovalPolicies(...policies: (ApprovalPolicy | null | undefined)[]): ApprovalPolicy | undefined {
  const given = policies.filter((p): p is ApprovalPolicy => !!p);
  const commands = [...new Set(given.flatMap((p) => p.commands ?? []))];
  const tools = [...new Set(given.flatMap((p) => p.tools ?? []))];
  const timeouts = given.flatMap((p) => (p.timeout_minutes === undefined ? [] : [p.timeout_minutes]));
  if (!commands.length && !tools.length && !timeouts.length) return undefined;
  return {
    ...(commands.length ? { commands } : {}),
    ...(tools.length ? { tools } : {}),
    ...(timeouts.length ? { timeout_minutes: Math.min(...timeouts) } : {}),
  };
}

/** Whether the policy gates anything at all. */
export function gatesAnything(policy: ApprovalPolicy | null | undefined): boolean {
  return !!(policy?.commands?.length || policy?.tools?.length);
}

/**
 * The glob of `policy` that makes this call wait, or undefined when it may run: its tool name
 * against `tools`, and for the agent's command tool (`run_command`; Claude Code's `Bash`) its
 * whole command line against `commands`.
 */
export function gateOf(
  policy: ApprovalPolicy | null | undefined,
  call: { name: string; arguments: Record<string, unknown> },
  commandTool: string = COMMAND_TOOL,
): string | undefined {
  if (!policy) return undefined;
  const tool = policy.tools?.find((glob) => picomatch.isMatch(call.name, glob, GLOB_OPTIONS));
  if (tool) return tool;
  const command = call.arguments.command;
  if (call.name !== commandTool || typeof command !== 'string') return undefined;
  return policy.commands?.find((glob) => picomatch.isMatch(command, glob, GLOB_OPTIONS));
}

/** The policy's timeout, or the default. */
export function approvalTimeoutMinutes(policy: ApprovalPolicy | null | undefined): number {
  return policy?.timeout_minutes ?? DEFAULT_APPROVAL_TIMEOUT_MINUTES;
}
