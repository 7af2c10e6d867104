import type { EntityManager } from 'typeorm';
import { ApiError, invalid } from '../../core/api-error';
import { uniqueFileNames } from '../../core/attachments';
import type { Config } from '../../core/config';
import { isUuid, newUuidV7 } from '../../core/ids';
import type { CreateRunRequest } from '../../core/schemas/run-schemas';
import type { FileContent } from '../../db/attachment-reads';
import { findRun, isConversationOfTeam } from '../../db/run-reads';
import { assertServedModel } from '../platform/model-list';
import { assertSkillOwnerAllowed } from '../skills/git-owners';
import type { RunPrincipal } from './run-executor';
import { checkLineage, lineageRefusal } from './lineage-limits';
import { assertRunFieldsSupported } from './run-request-fields';

/** What a create request asks for, checked before anything is recorded; the skill it names. */
export function checkCreateRequest(
  config: Config,
  body: CreateRunRequest,
  modelField = 'config.model_id',
): string | undefined {
  if (body.config?.computer_use_enabled) {
    throw new ApiError(
      'feature_not_available',
      'Computer use is not available on this service; omit `config.computer_use_enabled`.',
    );
  }
  assertRunFieldsSupported(body);
  const skill = body.skill ?? body.config?.skill_spec;
  if (skill) {
    assertSkillOwnerAllowed(config.workspace.gitAllowedOwners, skill, body.skill ? 'skill' : 'config.skill_spec');
  }
  for (const [index, extra] of (body.config?.skills ?? []).entries()) {
    assertSkillOwnerAllowed(config.workspace.gitAllowedOwners, extra, `config.skills.${index}`);
  }
  if (body.config?.model_id) assertServedModel(config, body.config.model_id, modelField);
  assertWithinOperatorLimits(config, body.config);
  return skill;
}

export async function resolveConversation(
  tx: EntityManager,
  principal: RunPrincipal,
  conversationId?: string,
): Promise<string> {
  if (conversationId === undefined) return newUuidV7();
  if (!(await isConversationOfTeam(tx, conversationId, principal.teamId)))
    throw invalid(`\`conversation_id\`: no conversation ${conversationId} in your team.`);
  return conversationId;
}

/** The parent a run names, of the caller's team and with room for one more child below it. */
export async function resolveParent(
  tx: EntityManager,
  principal: RunPrincipal,
  parentRunId: string | undefined,
  limits: Config['orchestration'],
  /** Who names the parent, for the words of a refusal. */
  asker: 'parent_run_id' | 'dispatch_agent' = 'parent_run_id',
): Promise<string | null> {
  if (parentRunId === undefined) return null;
  if (!isUuid(parentRunId) || !(await findRun(tx, parentRunId, principal.teamId))) {
    throw invalid(`\`parent_run_id\`: no run ${parentRunId} in your team.`);
  }
  const lineage = await checkLineage(tx, parentRunId, limits);
  if (!lineage.ok) throw invalid(lineageRefusal(lineage, parentRunId, asker));
  return parentRunId;
}

/** The request's attachments as stored: bytes decoded (validated as base64 by the schema), names sanitised and unique. */
export function decodeAttachments(attachments: CreateRunRequest['attachments']): FileContent[] {
  if (!attachments?.length) return [];
  const names = uniqueFileNames(attachments.map((a) => a.file_name));
  return attachments.map((a, i) => ({
    fileName: names[i]!,
    mimeType: a.mime_type.toLowerCase(),
    bytes: Buffer.from(a.data, 'base64'),
  }));
}

/** The operator's limits are ceilings: a run may ask for less, never for more. */
function assertWithinOperatorLimits(config: Config, requested: CreateRunRequest['config']): void {
  const limits = [
    ['max_steps', requested?.max_steps, config.agent.maxSteps, 'AGENT_MAX_STEPS'],
    ['max_tokens', requested?.max_tokens, config.agent.maxTokens, 'AGENT_MAX_TOKENS'],
    [
      'idle_timeout_minutes',
      requested?.idle_timeout_minutes,
      config.maxIdleTimeoutMinutes,
      'AGENT_MAX_IDLE_TIMEOUT_MINUTES',
    ],
  ] as const;
  for (const [field, value, ceiling, variable] of limits) {
    if (value !== undefined && value > ceiling) {
      throw invalid(
        `\`config.${field}\` is ${value}, above this service's limit of ${ceiling} (${variable}); ask for at most ${ceiling}.`,
      );
    }
  }
}
