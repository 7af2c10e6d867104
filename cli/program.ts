import { auditCommand, type AuditOptions } from './commands/audit';
import { Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULT_URL } from './cli-config';
import { artifactsCommand } from './commands/artifacts';
import { cancelCommand } from './commands/cancel';
import { approvalsCommand, decideCommand } from './commands/approvals';
import { checkpointsCommand, forkCommand, type ForkOptions } from './commands/checkpoints';
import { followupCommand } from './commands/followup';
import { getCommand } from './commands/get';
import { listCommand, type ListOptions } from './commands/list';
import { logsCommand } from './commands/logs';
import { planCommand } from './commands/plan';
import { runCommand, type RunOptions } from './commands/run';
import { secretsDeleteCommand, secretsListCommand, secretsSetCommand, type SecretSetOptions } from './commands/secrets';
import { MANAGED_SECRET_KINDS } from '../core/managed-secrets';
import { cliVersion, commandContext, type CommandContext } from './context';

/** Collects a repeatable option into a list. */
const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Collects repeatable `k=v` pairs into an object. */
function collectPairs(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const at = value.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError(`expected key=value (got "${value}").`);
  return { ...previous, [value.slice(0, at)]: value.slice(at + 1) };
}

function nonNegativeInteger(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`expected a whole number (got "${value}").`);
  return Number(value);
}

const EXIT_HELP = `
Environment:
  AGENT_RUNS_URL         the service (default ${DEFAULT_URL}); /api/v1 is added
  AGENT_RUNS_API_KEY     an API key (ark_...); required
  NO_COLOR, FORCE_COLOR  colour off; colour on where stdout is no terminal

Exit codes (with --wait or --follow: how the run ended):
  0  success, SUCCEEDED     3  FAILED     4  ERROR     5  CANCELLED
  6  BLOCKED: a call of the run waits for a person (agent-runs approvals)
  1  the API refused the request (its detail is printed) or could not be reached
  2  usage: an unknown option, a malformed value, no API key

--json prints only JSON on stdout (one document; one event per line when following);
messages for people go to stderr.`;

/**
 * The `agent-runs` program. Each action sets `exitCode`; `main` exits with it. `action` runs
 * a command with its context built from the global options (a missing key is a usage error).
 */
export function createProgram(result: { exitCode: number }): Command {
  const program = new Command('agent-runs')
    .description('Create, follow, steer and inspect agent runs from a terminal or a CI job.')
    .version(cliVersion())
    .option('--url <url>', 'the service URL (default: $AGENT_RUNS_URL, else http://localhost:8080)')
    .option('--api-key <key>', 'API key (default: $AGENT_RUNS_API_KEY)')
    .option('--json', 'print machine-readable JSON on stdout, and nothing else')
    .exitOverride()
    .showHelpAfterError('(add --help for usage)')
    .configureHelp({ showGlobalOptions: true })
    .addHelpText('after', EXIT_HELP);

  const action =
    <A extends unknown[]>(handler: (ctx: CommandContext, ...args: A) => Promise<number>) =>
    async (...args: unknown[]) => {
      const command = args[args.length - 1] as Command;
      result.exitCode = await handler(commandContext(command.optsWithGlobals()), ...(args.slice(0, -1) as A));
    };

  const waitOption = () => new Option('--wait', 'wait until the run ends; exit 0 if it SUCCEEDED (see exit codes)');
  const followOption = () =>
    new Option('--follow', 'print the run live until it ends; exit as with --wait').conflicts('wait');
  const idempotencyOption = () =>
    new Option('--idempotency-key <key>', 'make retrying this command safe: the same key creates nothing twice');

  program
    .command('run')
    .description('create a run and print its id')
    .argument('[prompt]', 'what the agent should do ("-" reads it from stdin)')
    .option('--env <environment_id>', 'run in this environment (its repositories and setup)')
    .option('--skill <spec>', 'run this skill (owner/repo:skill-name); the prompt is then optional')
    .option('--model <provider/model>', 'model, e.g. openai/gpt-4o')
    .option('--name <name>', 'agent name (config.name), a list filter')
    .option('--title <title>', 'title of the run')
    .option('--metadata <key=value>', 'metadata (repeatable)', collectPairs)
    .option('--idle-timeout <minutes>', 'how long the run waits for follow-ups after a turn', nonNegativeInteger)
    .addOption(
      new Option('--mode <mode>', 'plan: the agent only reads and ends with a plan to approve').choices([
        'normal',
        'plan',
      ]),
    )
    .option('--plan', 'the same as --mode plan')
    .option('--pr', 'deliver the change as a pull request per repository of --env (its URL printed with --wait)')
    .addOption(waitOption())
    .addOption(followOption())
    .addOption(idempotencyOption())
    .action(action((ctx, prompt: string | undefined, options: RunOptions) => runCommand(ctx, prompt, options)));

  program
    .command('list')
    .description('list runs, newest activity first (a table; same filters as GET /agent/runs)')
    .option('--state <state>', 'QUEUED, INPROGRESS, BLOCKED, SUCCEEDED, FAILED, ERROR, CANCELLED (repeatable)', collect)
    .option(
      '--task-status <status>',
      'running (itself or a descendant), failed, blocked, cancelled, complete (repeatable)',
      collect,
    )
    .option('--name <name>', 'agent name (config.name)')
    .option('--model <model_id>', 'model id')
    .option('--creator <uid>', 'creator uid')
    .option('--source <source>', 'API, SCHEDULED_AGENT, ORCHESTRATION, …')
    .option('--env <environment_id>', 'environment (empty-environment: runs without one)')
    .option('--skill <spec>', 'skill spec')
    .option('--schedule <schedule_id>', 'runs a schedule created')
    .option('--ancestor <run_id>', 'every run below this run')
    .option('--factory <uid>', 'runs of this factory')
    .option('--artifact-type <type>', 'runs with an artifact of this type (FILE, PLAN, EXTERNAL_REFERENCE)')
    .option('--created-after <time>', 'RFC 3339 time, e.g. 2026-11-01T00:00:00Z')
    .option('--created-before <time>', 'RFC 3339 time')
    .option('--updated-after <time>', 'RFC 3339 time')
    .option('--q <text>', 'text in the title, prompt or skill spec')
    .option('--metadata <key=value>', 'metadata that must match (repeatable)', collectPairs)
    .addOption(new Option('--sort-by <field>', 'sort field').choices(['updated_at', 'created_at', 'title', 'agent']))
    .addOption(new Option('--sort-order <order>', 'sort order').choices(['asc', 'desc']))
    .option('--limit <n>', 'runs per page (1-100, default 20)', nonNegativeInteger)
    .option('--cursor <cursor>', 'the next page, as the previous one said')
    .option('--all', 'every page, following cursors')
    .action(action((ctx, options: ListOptions) => listCommand(ctx, options)));

  program
    .command('get')
    .description('show a run')
    .argument('<run_id>')
    .action(action((ctx, runId: string) => getCommand(ctx, runId)));

  program
    .command('logs')
    .description("print a run's transcript (state changes, messages, commands and output, diffs)")
    .argument('<run_id>')
    .option('--follow', 'keep printing as the run goes on, until it ends; exit as with --wait')
    .action(action((ctx, runId: string, options: { follow?: boolean }) => logsCommand(ctx, runId, options)));

  program
    .command('followup')
    .description('send a follow-up message to a run (continues an ended run)')
    .argument('<run_id>')
    .argument('<message>', 'the message ("-" reads it from stdin)')
    .addOption(
      new Option('--mode <mode>', 'plan: revise the plan; normal (default): carry it out').choices(['normal', 'plan']),
    )
    .addOption(waitOption())
    .addOption(followOption())
    .addOption(idempotencyOption())
    .action(
      action((ctx, runId: string, message: string, options: Parameters<typeof followupCommand>[3]) =>
        followupCommand(ctx, runId, message, options),
      ),
    );

  program
    .command('cancel')
    .description('cancel a run')
    .argument('<run_id>')
    .action(action((ctx, runId: string) => cancelCommand(ctx, runId)));

  program
    .command('approvals')
    .description("your team's BLOCKED runs and the call or question each waits for")
    .action(action((ctx) => approvalsCommand(ctx)));

  for (const decision of ['approve', 'deny'] as const) {
    program
      .command(decision)
      .description(
        decision === 'approve'
          ? 'approve the call a BLOCKED run waits for (it runs); --comment answers a question'
          : 'deny the call a BLOCKED run waits for (the agent is told, with the comment)',
      )
      .argument('<run_id>')
      .option('--comment <text>', decision === 'approve' ? 'why; for a question, the answer' : 'why')
      .action(
        action((ctx, runId: string, options: { comment?: string }) => decideCommand(ctx, decision, runId, options)),
      );
  }

  program
    .command('artifacts')
    .description("list a run's artifacts with download URLs")
    .argument('<run_id>')
    .option('--download <dir>', 'download them into this directory')
    .action(action((ctx, runId: string, options: { download?: string }) => artifactsCommand(ctx, runId, options)));

  program
    .command('plan')
    .description("print a run's plan (the markdown of its newest PLAN artifact, or of --plan-version n)")
    .argument('<run_id>')
    .option('--plan-version <n>', 'that version of the plan (1 is the first)', nonNegativeInteger)
    .action(action((ctx, runId: string, options: { planVersion?: number }) => planCommand(ctx, runId, options)));

  program
    .command('checkpoints')
    .description("list a run's checkpoints (its files after each step that changed them), oldest first")
    .argument('<run_id>')
    .option('--download <checkpoint_id>', "save that checkpoint's workspace as a .tar.gz")
    .option('--output <file>', 'where --download saves it (default: checkpoint-<id>.tar.gz)')
    .action(
      action((ctx, runId: string, options: { download?: string; output?: string }) =>
        checkpointsCommand(ctx, runId, options),
      ),
    );

  program
    .command('fork')
    .description("start a new run from a run's checkpoint: its conversation up to there, its files as they were")
    .argument('<run_id>')
    .argument('[prompt]', 'the fork\'s next message ("-" reads it from stdin); without it, the agent continues')
    .option('--checkpoint <checkpoint_id>', 'the checkpoint to start from (default: the latest)')
    .option('--title <title>', 'the new run\'s title (default: "Fork of …")')
    .addOption(waitOption())
    .addOption(followOption())
    .addOption(idempotencyOption())
    .action(
      action((ctx, runId: string, prompt: string | undefined, options: ForkOptions) =>
        forkCommand(ctx, runId, prompt, options),
      ),
    );

  program
    .command('audit')
    .description("your team's audit log, newest first: who changed what, when, from where (admin keys)")
    .option('--action <action>', 'an action (run.cancel) or a family (webhook.*)')
    .option('--actor <uid>', "the actor's uid")
    .option('--resource <id>', 'the id of what was acted on')
    .option('--created-after <time>', 'RFC 3339 time, e.g. 2026-11-01T00:00:00Z')
    .option('--created-before <time>', 'RFC 3339 time')
    .option('--limit <n>', 'events per page (1-1000, default 100)', nonNegativeInteger)
    .option('--cursor <cursor>', 'the next page, as the previous one said')
    .option('--all', 'every page, following cursors')
    .action(action((ctx, options: AuditOptions) => auditCommand(ctx, options)));

  const secrets = program
    .command('secrets')
    .description("store, list and delete your team's secrets (keys for runs' harnesses); never shows a value");

  secrets
    .command('set')
    .description(
      'store a secret, or replace the one of that name (admin keys); the value is read from stdin, prompted for without echo on a terminal',
    )
    .argument('<name>', 'the name runs give in config.harness_auth_secrets')
    .addOption(
      new Option('--kind <kind>', "what it is (default: read from the value's prefix sk-ant-, sk-, AIza)").choices(
        MANAGED_SECRET_KINDS,
      ),
    )
    .option('--description <text>', 'a note for people')
    .action(action((ctx, name: string, options: SecretSetOptions) => secretsSetCommand(ctx, name, options)));

  secrets
    .command('list')
    .description("list your team's secrets: name, kind, description, last change (never a value)")
    .action(action((ctx) => secretsListCommand(ctx)));

  secrets
    .command('delete')
    .description('delete a secret (admin keys); runs that name it fail their next turn')
    .argument('<name>')
    .action(action((ctx, name: string) => secretsDeleteCommand(ctx, name)));

  return program;
}
