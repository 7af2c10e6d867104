import { Readable } from 'node:stream';
import type { EntityManager } from 'typeorm';
import { maskSecrets, runSecretValues } from '../core/run-secrets';
import type { Run } from '../db/rows/run';
import { loadRunEventsPage } from '../db/run-event-reads';
import { eventData } from './run-event-stream';
import type { SecretsKeyring } from '../core/secrets-keyring';

const PAGE = 500;

/**
 * The raw transcript of `runs`, one after the other: every entry as the event stream's `data`
 * (`id`, `run_id`, `kind`, `turn`, `created_at`, `payload`), one JSON object per line, the runs'
 * secrets masked. Read a page at a time, so a long transcript is never held whole.
 */
export function transcriptJsonLines(manager: EntityManager, runs: Run[], secretsKeyring: SecretsKeyring): Readable {
  async function* lines() {
    for (const run of runs) {
      const secrets = runSecretValues(run.config, secretsKeyring);
      let afterId = '0';
      for (;;) {
        const { events, hasMore } = await loadRunEventsPage(manager, run.runId, { afterId, limit: PAGE });
        for (const event of maskSecrets(events, secrets)) yield `${JSON.stringify(eventData(run.runId, event))}\n`;
        if (!hasMore || events.length === 0) break;
        afterId = events[events.length - 1]!.id;
      }
    }
  }
  return Readable.from(lines());
}
