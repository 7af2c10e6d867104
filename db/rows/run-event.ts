import type { RunEventKind, RunEventPayload } from '../../core/run-events';

/** One entry of a run's transcript; `eventKey` makes every write idempotent. */
export interface RunEvent {
  id: string;
  runId: string;
  eventKey: string;
  kind: RunEventKind;
  turn: number;
  payload: RunEventPayload;
  createdAt: Date;
}
