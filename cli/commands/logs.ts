import type { CommandContext } from '../context';
import { EXIT_CODES } from '../exit-codes';
import { streamRunEvents } from '../event-stream';
import { BACKLOG_QUIET_MS } from '../follow';
import { renderEvent } from '../render-event';
import type { RunEvent } from '../wire';
import { followAndReport } from './watch-run';

/**
 * `agent-runs logs <id>`: the transcript so far, read from the event stream until it has been
 * quiet for a moment (or the server ends it); with `--follow`, live until the run ends.
 */
export async function logsCommand(ctx: CommandContext, runId: string, options: { follow?: boolean }): Promise<number> {
  if (options.follow) return followAndReport(ctx, runId);
  const { out } = ctx;
  const events: RunEvent[] = [];
  await streamRunEvents(ctx.client, runId, {
    quietStopMs: BACKLOG_QUIET_MS,
    onEvent(event) {
      if (out.json) events.push(event);
      else out.text(renderEvent(event, out.style));
    },
  });
  if (out.json) out.document({ run_id: runId, events });
  return EXIT_CODES.ok;
}
