import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

const EventType = temporal.api.enums.v1.EventType;
const TimeoutType = temporal.api.enums.v1.TimeoutType;

/** What a set of workflows' histories say about their workflow tasks. */
export interface WorkflowTaskTimes {
  /** Started → completed, per workflow task: the worker's processing of it. */
  durations: number[];
  /** Scheduled → started: how long each waited for a worker. */
  waits: number[];
  timedOut: number;
  /** Of those, the ones that waited past the sticky queue's schedule-to-start timeout (then went to the shared queue). */
  stickyTimedOut: number;
  failed: number;
  /** Signals the workflows received (a team's admission wake-ups among them). */
  signals: number;
  /** History events of all the workflows together. */
  events: number;
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The history events of each of `workflowIds`, read once for every figure taken from them. */
export async function fetchHistories(client: Client, workflowIds: string[]): Promise<HistoryEvent[][]> {
  const histories: HistoryEvent[][] = [];
  for (const id of workflowIds) histories.push((await client.workflow.getHandle(id).fetchHistory()).events ?? []);
  return histories;
}

function millis(time: temporal.api.history.v1.IHistoryEvent['eventTime']): number {
  return Number(time?.seconds ?? 0) * 1000 + (time?.nanos ?? 0) / 1e6;
}

/** Times the workflow tasks of workflows' histories (`fetchHistories`). */
export function workflowTaskTimes(histories: HistoryEvent[][]): WorkflowTaskTimes {
  const times: WorkflowTaskTimes = {
    durations: [],
    waits: [],
    timedOut: 0,
    stickyTimedOut: 0,
    failed: 0,
    signals: 0,
    events: 0,
  };
  for (const events of histories) {
    times.events += events.length;
    let scheduled = 0;
    let started = 0;
    for (const event of events) {
      const at = millis(event.eventTime);
      switch (event.eventType) {
        case EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
          scheduled = at;
          break;
        case EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
          started = at;
          times.waits.push(at - scheduled);
          break;
        case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
          times.durations.push(at - started);
          break;
        case EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
          times.timedOut += 1;
          if (event.workflowTaskTimedOutEventAttributes?.timeoutType === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START)
            times.stickyTimedOut += 1;
          break;
        case EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
          times.failed += 1;
          break;
        case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
          times.signals += 1;
          break;
        default:
      }
    }
  }
  return times;
}

/** Where the time between two activities of a workflow goes, from its history (ms per step). */
export interface StepTimeline {
  /** Activity scheduled → started: its dispatch to a worker. */
  activityDispatch: number[];
  /** Activity started → completed: the activity itself, as the server saw it. */
  activity: number[];
  /** Activity completed → the next workflow task started: the server's turnaround and dispatch. */
  toWorkflowTask: number[];
  /** Workflow task started → completed: the worker's workflow code. */
  workflowTask: number[];
}

/** Splits each activity's round trip in workflows' histories (`fetchHistories`) into its parts. */
export function stepTimeline(histories: HistoryEvent[][]): StepTimeline {
  const timeline: StepTimeline = { activityDispatch: [], activity: [], toWorkflowTask: [], workflowTask: [] };
  for (const events of histories) {
    let activityScheduled = 0;
    let activityStarted = 0;
    let activityCompleted = 0;
    let taskStarted = 0;
    for (const event of events) {
      const at = millis(event.eventTime);
      switch (event.eventType) {
        case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
          activityScheduled = at;
          break;
        case EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
          activityStarted = at;
          timeline.activityDispatch.push(at - activityScheduled);
          break;
        case EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
          activityCompleted = at;
          // A started event is written with the completion (it is not recorded while retries may follow).
          timeline.activity.push(at - activityStarted);
          break;
        case EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
          taskStarted = at;
          if (activityCompleted) timeline.toWorkflowTask.push(at - activityCompleted);
          activityCompleted = 0;
          break;
        case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
          timeline.workflowTask.push(at - taskStarted);
          break;
        default:
      }
    }
  }
  return timeline;
}

/** Where a run's QUEUED → INPROGRESS went, in ms (`pickupTimeline`). */
export interface PickupTimeline {
  /** The run's row committed → its workflow started on the server: the API's create. */
  toWorkflowStart: number[];
  /** The workflow started → its first workflow task started on a worker: the wait for a worker. */
  toFirstTask: number[];
  /** The first workflow task started → INPROGRESS recorded: its local activities (admission, the turn's start). */
  inFirstTask: number[];
}

/**
 * Splits each run's QUEUED → INPROGRESS (`runs[i]`, absolute ms from the database) by its
 * workflow's history (`histories[i]`).
 */
export function pickupTimeline(
  histories: HistoryEvent[][],
  runs: { createdAt: number; startedAt: number }[],
): PickupTimeline {
  const timeline: PickupTimeline = { toWorkflowStart: [], toFirstTask: [], inFirstTask: [] };
  histories.forEach((events, i) => {
    const run = runs[i]!;
    const started = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
    const firstTask = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
    if (!started || !firstTask) return;
    timeline.toWorkflowStart.push(millis(started.eventTime) - run.createdAt);
    timeline.toFirstTask.push(millis(firstTask.eventTime) - millis(started.eventTime));
    timeline.inFirstTask.push(run.startedAt - millis(firstTask.eventTime));
  });
  return timeline;
}

/** Per workflow: from its start on the server to its first workflow task done (it has begun its work). */
export function firstTaskDone(histories: HistoryEvent[][]): number[] {
  const times: number[] = [];
  for (const events of histories) {
    const started = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
    const done = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    if (started && done) times.push(millis(done.eventTime) - millis(started.eventTime));
  }
  return times;
}
