import type { DataSource } from 'typeorm';
import type { CliHarnessType } from '../../core/harnesses';
import { appendRunEvent } from '../../db/run-events';
import { recordHarnessSession } from '../../db/harness-state';
import { capText } from '../tools/output-capture';
import type { HarnessEntry } from './cli-harness';

/** Entries one invocation may add to the transcript, and how many may wait to be written. */
const MAX_ENTRIES = 20_000;
const MAX_WAITING = 1_000;
/** The most of a message, a notice, or a tool call's arguments kept in an entry. */
const MAX_TEXT_BYTES = 256 * 1024;
const MAX_NOTICE_BYTES = 8 * 1024;
const MAX_ARGUMENTS_CHARS = 64 * 1024;
const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;

/** A tool call's arguments as kept: whole when small, else a preview of their JSON. */
function boundedObject(value: Record<string, unknown>): Record<string, unknown> {
  const json = JSON.stringify(value) ?? '{}';
  return json.length <= MAX_ARGUMENTS_CHARS ? value : { truncated: true, preview: json.slice(0, 4096) };
}

/** What one invocation reported beyond its transcript: its usage, its tool calls, how it ended. */
export interface InvocationReport {
  usage: Record<string, number>;
  costUsd?: number;
  toolCalls: Record<string, number>;
  sessionId?: string;
  errors: string[];
  result?: { text?: string; isError: boolean };
  /** The model the CLI said it used. */
  model?: string;
}

/**
 * Records a CLI's entries in the run's transcript as they arrive, in order: assistant text and
 * tool calls, each tool's result, notices; the session the moment the CLI names it (a retried
 * invocation resumes it). Keys carry the attempt, so a retried invocation adds to what the
 * interrupted one recorded instead of overwriting it.
 */
export class HarnessTranscript {
  readonly report: InvocationReport = { usage: {}, toolCalls: {}, errors: [] };
  private seq = 0;
  private queue: Promise<void> = Promise.resolve();
  private failure: unknown;
  private taken = 0;
  private waiting = 0;
  private dropped = 0;

  constructor(
    private readonly deps: { dataSource: DataSource; outputLimitBytes: number },
    private readonly at: {
      runId: string;
      turn: number;
      step: number;
      /** The step's attempt (counted by the service), and `r` for an invocation that replaced a session it could not resume. */
      attempt: string;
      harness: CliHarnessType;
      model?: string;
    },
  ) {}

  add(entries: HarnessEntry[]): void {
    for (const entry of entries) {
      // What a sandboxed process can make the CLI print is bounded: so many entries per
      // invocation, so many waiting to be written; the rest is counted, not kept.
      if (this.taken >= MAX_ENTRIES || this.waiting >= MAX_WAITING) {
        this.dropped += 1;
        continue;
      }
      this.taken += 1;
      this.waiting += 1;
      this.queue = this.queue
        .then(() => this.record(entry))
        .catch((err: unknown) => {
          this.failure ??= err;
        })
        .finally(() => {
          this.waiting -= 1;
        });
    }
  }

  /** Waits for every entry to be written; rethrows the first write that failed. */
  async flushed(): Promise<void> {
    await this.queue;
    if (this.failure) throw this.failure;
    if (this.dropped) {
      const dropped = this.dropped;
      this.dropped = 0;
      await this.record({
        kind: 'notice',
        message: `${dropped} more events of this invocation were not recorded (at most ${MAX_ENTRIES}, ${MAX_WAITING} waiting at once); the raw event stream artifact has what fits.`,
        level: 'warning',
      });
    }
  }

  private key(): string {
    const { turn, step, attempt } = this.at;
    return `h-t${turn}-s${step}-i${attempt}-${this.seq++}`;
  }

  private modelId(model?: string): string {
    return `${this.at.harness}/${model ?? this.report.model ?? this.at.model ?? 'default'}`;
  }

  private async record(entry: HarnessEntry): Promise<void> {
    const { dataSource } = this.deps;
    const { runId, turn, step } = this.at;
    const append = (kind: Parameters<typeof appendRunEvent>[1]['kind'], payload: Record<string, unknown>) =>
      appendRunEvent(dataSource.manager, { runId, eventKey: this.key(), kind, turn, payload } as Parameters<
        typeof appendRunEvent
      >[1]);
    switch (entry.kind) {
      case 'session':
        // Resumed later as an argument of the CLI: only an id of the usual shape is taken.
        if (!SESSION_ID.test(entry.sessionId)) return;
        this.report.sessionId = entry.sessionId;
        if (entry.model) this.report.model = entry.model;
        await recordHarnessSession(dataSource.manager, runId, entry.sessionId);
        return;
      case 'assistant':
        for (const call of entry.toolCalls)
          this.report.toolCalls[call.name] = (this.report.toolCalls[call.name] ?? 0) + 1;
        await append('assistant', {
          text: capText(entry.text, MAX_TEXT_BYTES),
          model_id: this.modelId(entry.model),
          ...(entry.toolCalls.length
            ? { tool_calls: entry.toolCalls.map((c) => ({ ...c, arguments: boundedObject(c.arguments) })) }
            : {}),
        });
        return;
      case 'tool_started':
        await append('tool_call_started', {
          tool_call_id: entry.toolCallId,
          name: entry.name,
          input: boundedObject(entry.input),
          step,
          call_index: 0,
        });
        return;
      case 'tool_result':
        await append('tool_call', {
          tool_call_id: entry.toolCallId,
          name: entry.name,
          input: boundedObject(entry.input),
          output: capText(entry.output, this.deps.outputLimitBytes),
          is_error: entry.isError,
          ...(entry.exitCode !== undefined ? { exit_code: entry.exitCode } : {}),
        });
        return;
      case 'usage':
        for (const [k, v] of Object.entries(entry.usage)) {
          if (isCount(v)) this.report.usage[k] = (this.report.usage[k] ?? 0) + v;
        }
        if (isCount(entry.costUsd)) this.report.costUsd = (this.report.costUsd ?? 0) + entry.costUsd;
        return;
      case 'error': {
        const message = capText(entry.message, MAX_NOTICE_BYTES);
        this.report.errors.push(message);
        await append('notice', { message: `[${this.at.harness}] ${message}`, level: 'warning' });
        return;
      }
      case 'notice':
        await append('notice', {
          message: `[${this.at.harness}] ${capText(entry.message, MAX_NOTICE_BYTES)}`,
          ...(entry.level ? { level: entry.level } : {}),
        });
        return;
      case 'result':
        this.report.result = { text: entry.text, isError: entry.isError };
        return;
    }
  }
}

/** The longest line of a CLI's output taken in; a longer one is dropped whole (its bytes are not kept). */
export const MAX_LINE_CHARS = 1024 * 1024;

/**
 * Splits a byte stream into lines, parsing each as a JSON object; other lines are kept as text.
 * The output is the sandbox's to write (any process of the run can write to the CLI's stdout),
 * so a line is held in parts, never re-joined per chunk, and one past MAX_LINE_CHARS is dropped.
 */
export class JsonLines {
  private parts: string[] = [];
  private partChars = 0;
  private dropping = 0;
  private readonly decoder = new TextDecoder();

  constructor(private readonly onLine: (event: Record<string, unknown> | undefined, raw: string) => void) {}

  write(chunk: Buffer): void {
    let text = this.decoder.decode(chunk, { stream: true });
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n')) {
      this.add(text.slice(0, nl));
      this.finishLine();
      text = text.slice(nl + 1);
    }
    this.add(text);
  }

  end(): void {
    this.finishLine();
  }

  private add(text: string): void {
    if (!text) return;
    if (this.dropping) {
      this.dropping += text.length;
      return;
    }
    this.parts.push(text);
    this.partChars += text.length;
    if (this.partChars > MAX_LINE_CHARS) {
      this.dropping = this.partChars;
      this.parts = [];
      this.partChars = 0;
    }
  }

  private finishLine(): void {
    if (this.dropping) {
      this.onLine(undefined, `[agent-runs: a line of ${this.dropping}+ characters was dropped]`);
    } else if (this.parts.length) {
      this.take(this.parts.join(''));
    }
    this.parts = [];
    this.partChars = 0;
    this.dropping = 0;
  }

  private take(line: string): void {
    const raw = line.trim();
    if (!raw) return;
    let event: Record<string, unknown> | undefined;
    if (raw.startsWith('{')) {
      try {
        event = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        event = undefined;
      }
    }
    this.onLine(event, raw);
  }
}
