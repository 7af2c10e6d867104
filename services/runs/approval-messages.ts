import type { RunEventPayloads } from '../../core/run-events';
import type { RunStatusMessage } from '../../core/run-types';
import type { RunApproval } from '../../db/run-approvals';

const ARGUMENT_CHARS = 300;

/** What the call would do, in one short line: a command's command line, else its arguments. */
export function callSummary(approval: Pick<RunApproval, 'tool' | 'arguments'>): string {
  const command = approval.arguments.command;
  const text = typeof command === 'string' ? command : JSON.stringify(approval.arguments);
  return text.length > ARGUMENT_CHARS ? `${text.slice(0, ARGUMENT_CHARS - 1)}…` : text;
}

/** A blocked run's status message: what waits, until when, and how to decide. */
export function blockedStatus(approval: RunApproval, glob: string | undefined): RunStatusMessage {
  const until = approval.expiresAt.toISOString();
  const how = `POST /api/v1/agent/runs/${approval.runId}/approvals/${approval.approvalId}`;
  if (approval.kind === 'question') {
    return {
      message: `Waiting for an answer to the agent's question: ${approval.question ?? ''}\nAnswer with a follow-up (its message is the answer) or ${how} with {"decision":"approve","comment":"<answer>"}; unanswered by ${until}, the agent is told nobody answered.`,
    };
  }
  return {
    message: `Waiting for approval of ${approval.tool}: ${callSummary(approval)}${glob ? ` (it matches \`${glob}\` of config.approval)` : ''}.\nApprove or deny with ${how} {"decision":"approve"|"deny","comment"?} (or \`agent-runs approve|deny\`); a follow-up denies it with its message as the comment. Undecided by ${until}, it is denied as timed out.`,
  };
}

function decider(approval: RunApproval): string {
  const by = approval.decidedBy;
  return by ? `${by.displayName} (${by.uid})` : 'nobody';
}

/**
 * What the model is told of a decided call that does not run: who denied it and why, or that
 * nobody decided in time; for a question, the answer (not an error) or that none came.
 */
export function decidedCallResult(approval: RunApproval): { output: string; isError: boolean } {
  const comment = approval.comment ? ` Their comment: ${approval.comment}` : ' They left no comment.';
  const waited = `from ${approval.requestedAt.toISOString()} until ${approval.expiresAt.toISOString()}`;
  if (approval.kind === 'question') {
    switch (approval.state) {
      case 'approved':
        return { output: approval.comment ?? '', isError: false };
      case 'denied':
        return { output: `${decider(approval)} declined to answer your question.${comment}`, isError: true };
      case 'timed_out':
        return {
          output: `Nobody answered your question (it waited ${waited}). Go on without the answer.`,
          isError: true,
        };
      default:
        return { output: 'Your question was withdrawn: the run was cancelled.', isError: true };
    }
  }
  switch (approval.state) {
    case 'denied':
      return {
        output: `This call was denied by ${decider(approval)} and was not run.${comment} Do not try to reach the same effect another way; go on without it or ask the user.`,
        isError: true,
      };
    case 'timed_out':
      return {
        output: `This call was not run: it needed a person's approval and nobody decided (it waited ${waited}), so it was denied as timed out.`,
        isError: true,
      };
    default:
      return { output: 'This call was not run: its approval was cancelled with the run.', isError: true };
  }
}

/** The transcript's entry for an approval, as it waits or as it was decided. */
export function approvalEntry(approval: RunApproval): RunEventPayloads['approval'] {
  const what =
    approval.kind === 'question'
      ? `the question "${approval.question ?? ''}"`
      : `${approval.tool}: ${callSummary(approval)}`;
  const comment = approval.comment ? `: ${approval.comment}` : '';
  const message = {
    pending: `Waiting for ${approval.kind === 'question' ? 'an answer to' : 'approval of'} ${what} (until ${approval.expiresAt.toISOString()}).`,
    approved:
      approval.kind === 'question'
        ? `Answered by ${decider(approval)}${comment}`
        : `Approved by ${decider(approval)}${comment}`,
    denied: `Denied by ${decider(approval)}${comment}`,
    timed_out: `Nobody decided on ${what} by ${approval.expiresAt.toISOString()}: denied as timed out.`,
    cancelled: `The wait for ${what} was cancelled.`,
  }[approval.state];
  const by = approval.decidedBy;
  return {
    approval_id: approval.approvalId,
    kind: approval.kind,
    tool: approval.tool,
    state: approval.state,
    message,
    ...(by ? { decided_by: { uid: by.uid, type: by.type, display_name: by.displayName } } : {}),
    ...(approval.comment ? { comment: approval.comment } : {}),
    ...(approval.state === 'pending' ? { expires_at: approval.expiresAt.toISOString() } : {}),
  };
}
