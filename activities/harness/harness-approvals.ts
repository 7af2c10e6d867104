import { isDeepStrictEqual } from 'node:util';
import { approvalTimeoutMinutes, gateOf } from '../../core/approval-policy';
import { CLI_HARNESSES, type CliHarnessType } from '../../core/harnesses';
import { stepApprovals, type RunApproval } from '../../db/run-approvals';
import type { StepRun } from '../../db/run-step-reads';
import { callSummary, decidedCallResult } from '../../services/runs/approval-messages';
import { createApprovalRequests } from '../../services/runs/approval-requests';
import type { WaitingApproval } from '../../workflows/run-contract';
import type { ActivityDeps } from '../deps';
import type { GatedToolCall, ToolCallDecision } from './model-gateway';

/** What the CLI's model is told of a call that now waits for a person; its invocation ends. */
export const WAITING_FOR_APPROVAL =
  "agent-runs: this call waits for a person's approval and did not run. Stop now and wait: this session is resumed with the decision.";

/** A step's CLI tool calls as `config.approval` gates them, at the model gateway (outside the sandbox). */
export interface HarnessApprovals {
  /** Decides one call the CLI's hook asks about. */
  decide(call: GatedToolCall): Promise<ToolCallDecision>;
  /** Aborted once a call waits: the CLI's invocation is ended, and the step returns `waiting`. */
  readonly stop: AbortSignal;
  readonly waiting: (WaitingApproval & { callIndex: number }) | undefined;
}

/**
 * The gate of one invocation of a run's CLI: a call no glob of the run's policy matches runs; a
 * matching one is the newest approved call of the step, re-issued (it runs, once), or it waits:
 * recorded through the approval-requests service (the run BLOCKED), denied to the CLI with
 * WAITING_FOR_APPROVAL, and the CLI ended. Every later call of the invocation is denied likewise.
 */
export function createHarnessApprovals(
  deps: ActivityDeps,
  at: { runId: string; turn: number; step: number; run: StepRun; type: CliHarnessType },
): HarnessApprovals {
  const { runId, turn, step, run } = at;
  const requests = createApprovalRequests(deps);
  const commandTool = CLI_HARNESSES[at.type].approvals?.commandTool;
  const stop = new AbortController();
  let waiting: HarnessApprovals['waiting'];
  let approvedUsed = false;
  const deny = (reason: string): ToolCallDecision => ({ decision: 'deny', reason });

  return {
    stop: stop.signal,
    get waiting() {
      return waiting;
    },
    async decide(call) {
      if (waiting) return deny(WAITING_FOR_APPROVAL);
      const glob = gateOf(run.config.approval, { name: call.tool, arguments: call.input }, commandTool);
      if (glob === undefined) return { decision: 'allow' };
      const recorded = await stepApprovals(deps.dataSource.manager, runId, turn, step);
      const newest = newestOf(recorded);
      if (!approvedUsed && newest?.state === 'approved' && sameCall(newest, call, commandTool)) {
        approvedUsed = true;
        return { decision: 'allow' };
      }
      const asked = await requests.waitFor({
        runId,
        turn,
        step,
        callIndex: recorded.size,
        kind: 'tool_call',
        tool: call.tool,
        arguments: call.input,
        timeoutMinutes: approvalTimeoutMinutes(run.config.approval),
        glob,
      });
      if (asked.state !== 'pending') return deny(decidedCallResult(asked).output);
      waiting = { approvalId: asked.approvalId, expiresAt: asked.expiresAt.toISOString(), callIndex: asked.callIndex };
      // After this answer is on its way: the CLI is ended, the run already BLOCKED.
      setImmediate(() => stop.abort());
      return deny(WAITING_FOR_APPROVAL);
    },
  };
}

/**
 * What a resumed session of the step is told of its newest approval, once decided: approved,
 * to issue the same call again (it then runs, once); otherwise who denied it and why, or that
 * nobody decided. Undefined when the step has no decided approval.
 */
export async function decisionMessage(
  deps: Pick<ActivityDeps, 'dataSource'>,
  at: { runId: string; turn: number; step: number },
): Promise<{ message: string } | { waiting: WaitingApproval } | undefined> {
  const newest = newestOf(await stepApprovals(deps.dataSource.manager, at.runId, at.turn, at.step));
  if (!newest) return undefined;
  if (newest.state === 'pending') {
    return { waiting: { approvalId: newest.approvalId, expiresAt: newest.expiresAt.toISOString() } };
  }
  if (newest.state === 'approved') {
    const by = newest.decidedBy ? ` by ${newest.decidedBy.displayName} (${newest.decidedBy.uid})` : '';
    const comment = newest.comment ? ` Their comment: ${newest.comment}` : '';
    return {
      message: `[Your ${newest.tool} call (${callSummary(newest)}) was approved${by}.${comment} Issue exactly the same call again now: it will run. Then go on with the task.]`,
    };
  }
  return { message: `[Your ${newest.tool} call (${callSummary(newest)}): ${decidedCallResult(newest).output}]` };
}

function newestOf(recorded: Map<number, RunApproval>): RunApproval | undefined {
  return recorded.size ? recorded.get(Math.max(...recorded.keys())) : undefined;
}

/** The approved call again: the same tool and input (for the shell tool, the same command line). */
function sameCall(approval: RunApproval, call: GatedToolCall, commandTool: string | undefined): boolean {
  if (approval.tool !== call.tool) return false;
  if (call.tool === commandTool) return approval.arguments.command === call.input.command;
  return isDeepStrictEqual(approval.arguments, call.input);
}
