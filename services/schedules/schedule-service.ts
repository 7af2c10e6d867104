import {
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleDescription,
  type ScheduleOptions,
} from '@temporalio/client';
import pLimit from 'p-limit';
import type { DataSource } from 'typeorm';
import { assertTeamHasRoom } from '../team-caps';
import type { KeysetPage } from '../../db/keyset-reads';
import type { Config } from '../../core/config';
import { isUuid, newUuidV7 } from '../../core/ids';
import { encryptMcpServers } from '../../core/secrets';
import type { AuthenticatedPrincipal } from '../../db/api-key-reads';
import { findAgentIdentity } from '../../db/agent-identity-reads';
import { honouredConfig } from '../runs/run-request-fields';
import { checkRunHarness, harnessWithDefaults } from '../runs/harness-request';
import { findFactory } from '../../db/factory-reads';
import { findEnvironment } from '../../db/environment-reads';
import {
  deleteSchedule,
  insertSchedule,
  restoreSchedule,
  touchSchedule,
  updateScheduleDefinition,
} from '../../db/schedules';
import {
  findSchedule,
  listSchedules,
  type Schedule,
  type ScheduleActor,
  type ScheduleDefinition,
} from '../../db/schedule-reads';
import { searchAttributes } from '../../workflows/run-contract';
import {
  SCHEDULED_RUN_WORKFLOW_TYPE,
  scheduledRunWorkflowId,
  temporalScheduleId,
  type ScheduledRunInput,
} from '../../workflows/schedule-contract';
import { ApiError, notFound } from '../../core/api-error';
import type { ResourcePageRequest } from '../../db/keyset-reads';
import type { createRunService } from '../runs/run-service';
import type { CreateScheduleRequest, UpdateScheduleRequest } from '../../core/schemas/schedule-schemas';
import { toScheduleItem, type ScheduledAgentItem } from './schedule-item';
import type { SecretsKeyring } from '../../core/secrets-keyring';

export { toScheduleItem, type ScheduledAgentItem } from './schedule-item';
export { runScheduleRef, schedulePrincipal, scheduledRunEvent, scheduledRunRequest } from './scheduled-run';

export interface ScheduleServiceDeps {
  config: Config;
  dataSource: DataSource;
  temporal: Client;
  secretsKeyring: SecretsKeyring;
  runService: ReturnType<typeof createRunService>;
}

/** Missed firings older than this (Temporal was down) are skipped rather than taken late. */
const CATCHUP_WINDOW = '10 minutes';
/** The part of the prompt shown with each firing in the Temporal UI. */
const MEMO_PROMPT_CHARS = 500;

const actorOf = (principal: AuthenticatedPrincipal): ScheduleActor => ({
  uid: principal.uid,
  type: principal.type,
  display_name: principal.displayName,
});

/** Temporal describes a schedule list makes at once. */
const SCHEDULE_DESCRIBES_AT_ONCE = 8;

/**
 * Schedules: a row in PostgreSQL (what to run) and one Temporal Schedule (when, and whether
 * paused). Each Temporal call has a deadline and runs outside any transaction.
 */
export function createScheduleService({
  config,
  dataSource,
  temporal,
  secretsKeyring,
  runService,
}: ScheduleServiceDeps) {
  const withinDeadline = <T>(call: () => Promise<T>): Promise<T> =>
    temporal.withDeadline(Date.now() + config.temporal.rpcTimeoutMs, call);
  const handleOf = (scheduleId: string) => temporal.schedule.getHandle(temporalScheduleId(scheduleId));

  /** The Temporal Schedule of a row, as created or as an update replaces it. */
  function temporalSchedule(schedule: Schedule, enabled: boolean, note: string) {
    const input: ScheduledRunInput = { scheduleId: schedule.scheduleId };
    const attributes = [
      { key: searchAttributes.schedule, value: schedule.scheduleId },
      { key: searchAttributes.creator, value: schedule.creator.uid },
    ];
    return {
      spec: { cronExpressions: [schedule.cronSchedule], timezone: 'UTC' },
      action: {
        type: 'startWorkflow' as const,
        workflowType: SCHEDULED_RUN_WORKFLOW_TYPE,
        workflowId: scheduledRunWorkflowId(schedule.scheduleId),
        taskQueue: config.temporal.taskQueue,
        args: [input],
        memo: { scheduleName: schedule.name, prompt: schedule.prompt.slice(0, MEMO_PROMPT_CHARS) },
        typedSearchAttributes: attributes,
      },
      // A firing only creates a run: one still retrying never holds up the next.
      policies: { overlap: ScheduleOverlapPolicy.ALLOW_ALL, catchupWindow: CATCHUP_WINDOW },
      state: { paused: !enabled, note },
      typedSearchAttributes: attributes,
    } satisfies Omit<ScheduleOptions, 'scheduleId'>;
  }

  /** Creates the row's Temporal Schedule, or replaces its definition and state. */
  async function putInTemporal(schedule: Schedule, enabled: boolean, note: string): Promise<void> {
    const options = temporalSchedule(schedule, enabled, note);
    await withinDeadline(async () => {
      try {
        await handleOf(schedule.scheduleId).update(() => options);
      } catch (err) {
        if (!(err instanceof ScheduleNotFoundError)) throw err;
        // Gone from Temporal (an operator deleted it): the row says what it should be.
        await temporal.schedule.create({
          ...options,
          scheduleId: temporalScheduleId(schedule.scheduleId),
          memo: { scheduleId: schedule.scheduleId, teamId: schedule.teamId },
        });
      }
    });
  }

  async function describe(scheduleId: string): Promise<ScheduleDescription | undefined> {
    try {
      return await withinDeadline(() => handleOf(scheduleId).describe());
    } catch (err) {
      if (err instanceof ScheduleNotFoundError) return undefined;
      throw err;
    }
  }

  const view = async (schedule: Schedule) => toScheduleItem(schedule, await describe(schedule.scheduleId));

  async function load(principal: AuthenticatedPrincipal, scheduleId: string): Promise<Schedule> {
    const schedule = isUuid(scheduleId) ? await findSchedule(dataSource.manager, scheduleId, principal.teamId) : null;
    if (!schedule) throw notFound(`No schedule ${scheduleId}.`);
    return schedule;
  }

  /** Checks the run each firing will ask for, as `POST /agent/runs` would, before anything is recorded. */
  async function definitionOf(
    principal: AuthenticatedPrincipal,
    body: CreateScheduleRequest | UpdateScheduleRequest,
  ): Promise<ScheduleDefinition> {
    if (body.mode !== undefined && body.mode !== 'normal') {
      throw new ApiError(
        'feature_not_available',
        `\`mode\` "${body.mode}" is not available for scheduled runs on this service; omit \`mode\` or send "normal".`,
      );
    }
    const config = honouredConfig(body.agent_config) ?? {};
    const definition: ScheduleDefinition = {
      name: body.name,
      cronSchedule: body.cron_schedule.trim().split(/\s+/).join(' '),
      prompt: body.prompt ?? '',
      agentConfig: config.mcp_servers
        ? { ...config, mcp_servers: encryptMcpServers(config.mcp_servers, secretsKeyring) }
        : config,
      metadata: body.metadata ?? null,
      agentUid: body.agent_uid ?? null,
    };
    runService.checkCreateRequest(
      principal,
      {
        ...(body.prompt ? { prompt: body.prompt } : {}),
        config,
        ...(body.agent_uid ? { agent_identity_uid: body.agent_uid } : {}),
      },
      'agent_config.model_id',
    );
    if (
      config.environment_id &&
      !(await findEnvironment(dataSource.manager, config.environment_id, principal.teamId))
    ) {
      throw notFound(`\`agent_config.environment_id\`: no environment ${config.environment_id} in your team.`);
    }
    const agent = body.agent_uid ? await findAgentIdentity(dataSource.manager, body.agent_uid, principal.teamId) : null;
    if (body.agent_uid && !agent) throw notFound(`\`agent_uid\`: no agent ${body.agent_uid} in your team.`);
    // The harness each firing's run resolves to, as its creation will check it.
    await checkRunHarness(
      dataSource.manager,
      principal.teamId,
      {
        requested: config,
        resolved: harnessWithDefaults(config, agent),
        executor: agent,
        factory: agent?.factoryUid ? await findFactory(dataSource.manager, agent.factoryUid, principal.teamId) : null,
      },
      { at: 'agent_config.', subject: 'schedule' },
    );
    return definition;
  }

  const noteBy = (principal: AuthenticatedPrincipal, what: string) =>
    `${what} by ${principal.displayName} (${principal.uid}) through the API`;

  return {
    async create(principal: AuthenticatedPrincipal, body: CreateScheduleRequest): Promise<ScheduledAgentItem> {
      const definition = await definitionOf(principal, body);
      const scheduleId = newUuidV7();
      // Recorded first, so that a firing always finds its row.
      const schedule = await dataSource.transaction(async (tx) => {
        await assertTeamHasRoom(tx, 'schedules', principal.teamId, config.quotas.teamMaxSchedules);
        return insertSchedule(tx, { ...definition, scheduleId, teamId: principal.teamId, creator: actorOf(principal) });
      });
      const enabled = body.enabled ?? true;
      try {
        await withinDeadline(() =>
          temporal.schedule.create({
            ...temporalSchedule(schedule, enabled, noteBy(principal, enabled ? 'Created' : 'Created paused')),
            scheduleId: temporalScheduleId(scheduleId),
            memo: { scheduleId, teamId: principal.teamId },
          }),
        );
      } catch (err) {
        // Had the create reached Temporal after all, its first firing finds no row and deletes it.
        await deleteSchedule(dataSource.manager, scheduleId);
        throw err;
      }
      return view(schedule);
    },

    async list(
      principal: AuthenticatedPrincipal,
      request: ResourcePageRequest,
    ): Promise<KeysetPage<ScheduledAgentItem>> {
      const page = await listSchedules(dataSource.manager, principal.teamId, request);
      // Timing and paused state live in Temporal: one describe each, a few at a time, so that a
      // long list does not flood the Temporal frontend.
      const describing = pLimit(SCHEDULE_DESCRIBES_AT_ONCE);
      return { ...page, rows: await Promise.all(page.rows.map((schedule) => describing(() => view(schedule)))) };
    },

    async get(principal: AuthenticatedPrincipal, scheduleId: string): Promise<ScheduledAgentItem> {
      return view(await load(principal, scheduleId));
    },

    async update(
      principal: AuthenticatedPrincipal,
      scheduleId: string,
      body: UpdateScheduleRequest,
    ): Promise<ScheduledAgentItem> {
      const previous = await load(principal, scheduleId);
      const definition = await definitionOf(principal, body);
      const updated = await updateScheduleDefinition(
        dataSource.manager,
        scheduleId,
        principal.teamId,
        definition,
        actorOf(principal),
      );
      if (!updated) throw notFound(`No schedule ${scheduleId}.`);
      try {
        await putInTemporal(updated, body.enabled, noteBy(principal, body.enabled ? 'Updated' : 'Updated and paused'));
      } catch (err) {
        // Temporal still runs the old definition: the row says so again.
        await restoreSchedule(dataSource.manager, previous, updated.updatedAt);
        throw err;
      }
      return view(updated);
    },

    async setEnabled(
      principal: AuthenticatedPrincipal,
      scheduleId: string,
      enabled: boolean,
    ): Promise<ScheduledAgentItem> {
      const schedule = await load(principal, scheduleId);
      const note = noteBy(principal, enabled ? 'Resumed' : 'Paused');
      try {
        await withinDeadline(() => (enabled ? handleOf(scheduleId).unpause(note) : handleOf(scheduleId).pause(note)));
      } catch (err) {
        if (!(err instanceof ScheduleNotFoundError)) throw err;
        await putInTemporal(schedule, enabled, note);
      }
      return view((await touchSchedule(dataSource.manager, scheduleId, actorOf(principal))) ?? schedule);
    },

    /** Temporal first: once its Schedule is gone nothing fires, and a retry finishes a half-done delete. */
    async delete(principal: AuthenticatedPrincipal, scheduleId: string): Promise<void> {
      await load(principal, scheduleId);
      try {
        await withinDeadline(() => handleOf(scheduleId).delete());
      } catch (err) {
        if (!(err instanceof ScheduleNotFoundError)) throw err;
      }
      await deleteSchedule(dataSource.manager, scheduleId);
    },
  };
}
