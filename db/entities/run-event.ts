import { EntitySchema } from 'typeorm';
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

export const RunEventEntity = new EntitySchema<RunEvent>({
  name: 'RunEvent',
  tableName: 'run_events',
  columns: {
    id: { type: 'bigint', primary: true, generated: 'increment' },
    runId: { name: 'run_id', type: 'uuid' },
    eventKey: { name: 'event_key', type: 'text' },
    kind: { type: 'text' },
    turn: { type: 'integer' },
    payload: { type: 'jsonb' },
    createdAt: { name: 'created_at', type: 'timestamptz', precision: 3 },
  },
});
