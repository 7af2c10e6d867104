import { z } from 'zod';
import { group, intFrom, optionalString } from './variable';

/** The model providers, and how a step calls them. */
export const models = group('Models', {
  OPENAI_API_KEY: {
    schema: optionalString,
    description: 'key for the OpenAI-compatible provider',
    readBy: ['workers'],
    unset: 'unset',
  },
  OPENAI_BASE_URL: {
    schema: z.url().default('https://api.openai.com/v1'),
    description: 'base URL of the OpenAI-compatible endpoint',
    readBy: ['workers'],
  },
  ANTHROPIC_API_KEY: {
    schema: optionalString,
    description: 'key for Anthropic',
    readBy: ['workers'],
    unset: 'unset',
  },
  ANTHROPIC_BASE_URL: {
    schema: z.url().default('https://api.anthropic.com'),
    description: 'base URL of the Anthropic Messages API',
    readBy: ['workers'],
  },
  GEMINI_API_KEY: {
    schema: optionalString,
    description: 'key for Gemini (the Gemini CLI harness)',
    readBy: ['workers'],
    unset: 'unset',
  },
  GEMINI_BASE_URL: {
    schema: z.url().default('https://generativelanguage.googleapis.com'),
    description: 'base URL of the Gemini API',
    readBy: ['workers'],
  },
  AGENT_DEFAULT_MODEL: {
    schema: z.string().default('openai/gpt-4o-mini'),
    description: 'model of runs that do not name one',
    readBy: ['API', 'workers'],
  },
  MODEL_PRICES: {
    schema: optionalString,
    description:
      'JSON of USD per million tokens by model id, merged over the built-in ones; a model named here is one runs may name',
    readBy: ['API', 'workers'],
    unset: 'built-in prices',
  },
  MODEL_CONTEXT_TOKENS: {
    schema: optionalString,
    description:
      'JSON of context window sizes in tokens by model id, merged over the built-in ones, e.g. `{"openai/my-model":32000}`; a model named here is one runs may name (how to add a model an OpenAI-compatible endpoint serves)',
    readBy: ['API', 'workers'],
    unset: 'built-in for the known models',
  },
  AGENT_DEFAULT_CONTEXT_TOKENS: {
    schema: intFrom(128_000, 1000, 10_000_000),
    description: 'context window of models `MODEL_CONTEXT_TOKENS` does not name',
    readBy: ['workers'],
  },
  MODEL_REQUEST_TIMEOUT_SECONDS: {
    schema: intFrom(600, 1, 3600),
    description: 'timeout of one model request',
    readBy: ['workers'],
  },
  MODEL_RETRY_MAX_ATTEMPTS: {
    schema: intFrom(6, 1, 100),
    description: 'attempts of a failing model step before the run ends `ERROR`',
    readBy: ['API', 'workers'],
  },
  MODEL_RETRY_INITIAL_INTERVAL_MS: {
    schema: intFrom(1000, 1, 3_600_000),
    description: 'first retry delay of a model step',
    readBy: ['API', 'workers'],
  },
  MODEL_RETRY_MAX_INTERVAL_MS: {
    schema: intFrom(60_000, 1, 3_600_000),
    description: 'largest retry delay of a model step',
    readBy: ['API', 'workers'],
  },
});

/** What one run may do: its steps, tokens, commands, idle window and run tree. */
export const agent = group('Agent', {
  AGENT_MAX_STEPS: {
    schema: intFrom(50, 1, 10_000),
    description: 'model calls per turn of a run without `config.max_steps`, and the most a run may ask for',
    readBy: ['API', 'workers'],
  },
  AGENT_MAX_TOKENS: {
    schema: intFrom(2_000_000, 1, 1_000_000_000),
    description: 'tokens per run without `config.max_tokens`, and the most a run may ask for',
    readBy: ['API', 'workers'],
  },
  AGENT_COMMAND_TIMEOUT_SECONDS: {
    schema: intFrom(600, 1, 86_400),
    description: 'default and largest timeout of an agent command',
    readBy: ['workers'],
  },
  AGENT_HARNESS_TURN_TIMEOUT_SECONDS: {
    schema: intFrom(14_400, 10, 7 * 86_400),
    description:
      "longest one invocation of a harness's CLI (a turn of a Claude Code, Codex or Gemini CLI run) may take",
    readBy: ['workers'],
  },
  AGENT_TOOL_OUTPUT_LIMIT_BYTES: {
    schema: intFrom(30_000, 1_000, 10_000_000),
    description: "most of a tool's output the model sees",
    readBy: ['workers'],
  },
  AGENT_IDLE_TIMEOUT_MINUTES: {
    schema: intFrom(10, 0, 1440),
    description: 'default idle window for follow-ups, never above `AGENT_MAX_IDLE_TIMEOUT_MINUTES`',
    readBy: ['API', 'workers'],
  },
  AGENT_MAX_IDLE_TIMEOUT_MINUTES: {
    schema: intFrom(1440, 0, 1440),
    description: 'the longest idle window a run may ask for',
    readBy: ['API', 'workers'],
  },
  ORCHESTRATION_MAX_DEPTH: {
    schema: intFrom(3, 1, 20),
    description: 'levels of runs below a root run, through `dispatch_agent` or `parent_run_id`',
    readBy: ['API', 'workers'],
  },
  ORCHESTRATION_MAX_CHILDREN_PER_RUN: {
    schema: intFrom(10, 1, 1000),
    description: 'runs directly below one run',
    readBy: ['API', 'workers'],
  },
  APPROVALS_MEMBERS_MAY_DECIDE: {
    schema: z.enum(['true', 'false']).default('false'),
    description:
      "`true`: member keys may approve or deny a run's waiting calls too (admin keys always may; an agent key never decides its own run's calls)",
    readBy: ['API'],
  },
});

/** Where a run's workspace lives and where its repositories come from. */
export const workspaces = group('Workspaces and git', {
  AGENT_RUNS_WORKSPACE_DIR: {
    schema: optionalString,
    description: 'where workers keep run workspaces',
    readBy: ['workers'],
    unset: '`{AGENT_RUNS_DATA_DIR}/workspaces`',
  },
  GIT_BASE_URL: {
    schema: z.string().default('https://github.com'),
    description: 'repositories are cloned from `{GIT_BASE_URL}/<owner>/<repo>`',
    readBy: ['workers'],
  },
  GIT_TOKEN: {
    schema: optionalString,
    description: 'token sent as an HTTP header when cloning over http(s)',
    readBy: ['workers'],
    unset: 'unset',
  },
  GIT_TOKEN_FOR_PUSH: {
    schema: z.enum(['true', 'false']).default('false'),
    description:
      "`true`: GIT_TOKEN also pushes a run's branch and opens its pull request (`config.delivery.pull_request`) where the team has no `git_credentials` secret for the repository's host; otherwise a pull request needs the team's own credential",
    readBy: ['workers'],
  },
  GIT_COMMIT_AUTHOR: {
    schema: z
      .string()
      .regex(/^[^<>\n]*[^<>\s] <[^<>\s]+>$/, 'must be `Name <email>`, e.g. `Agent Runs <agent-runs@example.com>`')
      .optional(),
    description:
      "author and committer of the commits the worker makes of a run's changes for a pull request, as `Name <email>`",
    readBy: ['workers'],
    unset: '`agent-runs <agent-runs@localhost>`',
  },
  GIT_ALLOWED_OWNERS: {
    schema: optionalString,
    description:
      'comma-separated owners (case-insensitive) whose repositories environments and skills may name; others are 403',
    readBy: ['API', 'workers'],
    unset: 'unset: every owner',
  },
  GIT_FORGES: {
    schema: optionalString,
    description:
      'comma-separated `host=kind` pairs (host with its port where there is one; kind `github`, `gitlab` or `gitea`, which Forgejo speaks): the forge whose API opens pull requests for repositories on that host. A `github` host other than github.com is a GitHub Enterprise Server (API at `/api/v3`)',
    readBy: ['workers'],
    unset: '`github.com=github,gitlab.com=gitlab` (always known; pairs here add to or override them)',
  },
  IMAGE_ALLOWED_REGISTRIES: {
    schema: optionalString,
    description:
      "comma-separated registry hosts (with the port where there is one, e.g. `ghcr.io,registry.internal:5000`) an environment's `docker_image` may come from; others are 400",
    readBy: ['API', 'workers'],
    unset: 'unset: every registry',
  },
  IMAGE_INSECURE_REGISTRIES: {
    schema: optionalString,
    description:
      'comma-separated registry hosts (with port) reached over plain HTTP, such as a local mirror; every other registry needs TLS',
    readBy: ['workers'],
    unset: 'unset: TLS everywhere',
  },
  IMAGE_CACHE_DIR: {
    schema: optionalString,
    description:
      "where workers keep environments' images, unpacked, one directory per digest, and their setup snapshots",
    readBy: ['workers'],
    unset: '`{AGENT_RUNS_DATA_DIR}/images`',
  },
  IMAGE_CACHE_MAX_BYTES: {
    schema: intFrom(20 * 1024 ** 3, 1024 * 1024, Number.MAX_SAFE_INTEGER),
    description:
      'disk the image cache may use (images and setup snapshots); least recently used ones no live run uses are removed past it, and a larger image is refused (`image_too_large`)',
    readBy: ['workers'],
  },
  ENVIRONMENT_SNAPSHOT_MAX_AGE_HOURS: {
    schema: intFrom(24, 1, 24 * 365),
    description:
      "how long an environment's setup snapshot (`setup_snapshot`) is reused before its setup runs again; snapshots are kept in the image cache, under IMAGE_CACHE_MAX_BYTES",
    readBy: ['workers'],
  },
  IMAGE_PULL_TIMEOUT_SECONDS: {
    schema: intFrom(1800, 10, 86_400),
    description:
      'longest each step of an image pull (resolving, downloading, unpacking) may take before the pull is tried again',
    readBy: ['workers'],
  },
  SETUP_COMMAND_TIMEOUT_SECONDS: {
    schema: intFrom(900, 1, 86_400),
    description: 'timeout of each setup command of an environment',
    readBy: ['workers'],
  },
});
