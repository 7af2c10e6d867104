import type { DataSource } from 'typeorm';
import type { CliHarnessType } from '../../core/harnesses';
import { appendRunEvent } from '../../db/run-events';
import { recordHarnessSession } from '../../db/harness-state';
import { capText } from '../tools/output-capture';
import type { HarnessEntry } from './cli-harness';

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

  constructor(
    private readonly deps: { dataSource: DataSource; outputLimitBytes: number },
    private readonly at: {
      runId: string;
      turn: number;
      step: number;
      /** The activity attempt, and `r` for an invocation that replaced a session it could not resume. */
      attempt: string;
      harness: CliHarnessType;
      model?: string;
    },
  ) {}

  add(entries: HarnessEntry[]): void {
    for (const entry of entries) {
      this.queue = this.queue
        .then(() => this.record(entry))
        .catch((err: unknown) => {
          this.failure ??= err;
        });
    }
  }

  /** Waits for every entry to be written; rethrows the first write that failed. */
  async flushed(): Promise<void> {
    await this.queue;
    if (this.failure) throw this.failure;
  }

  private key(): string {
    const { turn, step, attempt } = this.at;
    return `h-t${turn}-s${step}-a${attempt}-${this.seq++}`;
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
        this.report.sessionId = entry.sessionId;
        if (entry.model) this.report.model = entry.model;
        await recordHarnessSession(dataSource.manager, runId, entry.sessionId);
        return;
      case 'assistant':
        for (const call of entry.toolCalls)
          this.report.toolCalls[call.name] = (this.report.toolCalls[call.name] ?? 0) + 1;
        await append('assistant', {
          text: entry.text,
          model_id: this.modelId(entry.model),
          ...(entry.toolCalls.length ? { tool_calls: entry.toolCalls } : {}),
        });
        return;
      case 'tool_started':
        await append('tool_call_started', {
          tool_call_id: entry.toolCallId,
          name: entry.name,
          input: entry.input,
          step,
          call_index: 0,
        });
        return;
      case 'tool_result':
        await append('tool_call', {
          tool_call_id: entry.toolCallId,
          name: entry.name,
          input: entry.input,
          output: capText(entry.output, this.deps.outputLimitBytes),
          is_error: entry.isError,
          ...(entry.exitCode !== undefined ? { exit_code: entry.exitCode } : {}),
        });
        return;
      case 'usage':
        for (const [k, v] of Object.entries(entry.usage)) this.report.usage[k] = (this.report.usage[k] ?? 0) + v;
        if (entry.costUsd !== undefined) this.report.costUsd = (this.report.costUsd ?? 0) + entry.costUsd;
        return;
      case 'error':
        this.report.errors.push(entry.message);
        await append('notice', { message: `[${this.at.harness}] ${entry.message}` });
        return;
      case 'notice':
        await append('notice', { message: `[${this.at.harness}] ${entry.message}` });
        return;
      case 'result':
        this.report.result = { text: entry.text, isError: entry.isError };
        return;
    }
  }
}

/** Splits a byte stream into lines, parsing each as a JSON object; other lines are kept as text. */
export class JsonLines {
  private rest = '';
  private readonly decoder = new TextDecoder();

  constructor(private readonly onLine: (event: Record<string, unknown> | undefined, raw: string) => void) {}

  write(chunk: Buffer): void {
    const text = this.rest + this.decoder.decode(chunk, { stream: true });
    const lines = text.split('\n');
    this.rest = lines.pop() ?? '';
    for (const line of lines) this.take(line);
  }

  end(): void {
    if (this.rest) this.take(this.rest);
    this.rest = '';
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
