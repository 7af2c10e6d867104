import { approvalTimeoutMinutes, gateOf } from '../../core/approval-policy';
import type { ToolCallRecord } from '../../core/run-events';
import { stepApprovals, type RunApproval } from '../../db/run-approvals';
import type { StepRun } from '../../db/run-step-reads';
import { decidedCallResult } from '../../services/runs/approval-messages';
import { createApprovalRequests, type WaitingCall } from '../../services/runs/approval-requests';
import type { WaitingApproval } from '../../workflows/run-contract';
import type { ActivityDeps } from '../deps';
import type { ToolOutcome } from '../tools/builtin-tools';

/** The built-in tool whose calls always wait, for the user's answer. */
export const ASK_USER_TOOL = 'ask_user';

/** What the gate found for one step's calls: one that must wait now, or the decisions made. */
export interface StepDecisions {
  /** A call that waits for a person: the step returns it to the workflow before any call runs. */
  waiting?: WaitingApproval;
  /** The decided calls, by position. */
  decided: Map<number, RunApproval>;
}

/**
 * The calls of a step that wait for a person: those `config.approval` gates and every
 * `ask_user`. All of a step's approvals are asked for before any of its calls runs, so that a
 * blocked run has nothing unsaved in its workspace when it gives the workspace up; the step,
 * run again, asks for the next one or runs its calls with the decisions made.
 */
export function createApprovalGate(deps: ActivityDeps) {
  const requests = createApprovalRequests(deps);
  return {
    async decisions(
      at: { runId: string; turn: number; step: number; run: StepRun },
      calls: { index: number; call: ToolCallRecord }[],
    ): Promise<StepDecisions> {
      const { runId, turn, step, run } = at;
      const decided = new Map<number, RunApproval>();
      const gated = calls.flatMap(({ index, call }) => {
        const wait = waitingCall(run, call);
        return wait ? [{ index, call, wait }] : [];
      });
      if (!gated.length) return { decided };
      const recorded = await stepApprovals(deps.dataSource.manager, runId, turn, step);
      for (const { index, call, wait } of gated) {
        const approval = recorded.get(index);
        if (approval && approval.state !== 'pending') {
          decided.set(index, approval);
          continue;
        }
        const asked = await requests.waitFor({
          runId,
          turn,
          step,
          callIndex: index,
          tool: call.name,
          arguments: call.arguments,
          timeoutMinutes: approvalTimeoutMinutes(run.config.approval),
          ...wait,
        });
        // Decided between the read and the request (by the deadline): then it counts as decided.
        if (asked.state !== 'pending') {
          decided.set(index, asked);
          continue;
        }
        return { waiting: { approvalId: asked.approvalId, expiresAt: asked.expiresAt.toISOString() }, decided };
      }
      return { decided };
    },

    /** The result of a decided call that does not run (denied, timed out; a question's answer). */
    resultOf(approval: RunApproval): ToolOutcome | undefined {
      if (approval.kind === 'tool_call' && approval.state === 'approved') return undefined;
      return decidedCallResult(approval);
    },
  };
}

/** Whether the call waits, and as what: a question, or a call a glob of the run's policy matched. */
function waitingCall(run: StepRun, call: ToolCallRecord): Pick<WaitingCall, 'kind' | 'question' | 'glob'> | undefined {
  if (call.name === ASK_USER_TOOL) {
    const question = call.arguments.question;
    return typeof question === 'string' && question.trim() ? { kind: 'question', question } : undefined;
  }
  const glob = gateOf(run.config.approval, call);
  return glob === undefined ? undefined : { kind: 'tool_call', glob };
}
