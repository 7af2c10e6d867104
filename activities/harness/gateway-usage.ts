import { createParser } from 'eventsource-parser';
import type { HarnessProvider } from '../../core/harnesses';

/**
 * A provider response's token counts, in the provider's own categories (absent: not reported).
 * Anthropic's cache counters are not part of its `inputTokens`; OpenAI's and Gemini's cached
 * and reasoning counts are parts of their input and output.
 */
export interface ResponseUsage {
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
  cacheReadInputTokens?: number;
  cacheCreationInputTokens?: number;
  cachedInputTokens?: number;
  reasoningOutputTokens?: number;
  /** Every token the response was billed for. */
  totalTokens: number;
}

/** The largest non-streamed body read for its usage; a larger one passes through uncounted. */
const MAX_JSON_BYTES = 8 * 1024 * 1024;

type Json = Record<string, unknown>;
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);
const obj = (v: unknown): Json => (v && typeof v === 'object' ? (v as Json) : {});

/**
 * Reads a provider's response as it streams past (the bytes themselves pass through unchanged)
 * and says what it used. Server-sent events are parsed event by event; a JSON body is read whole.
 */
export class UsageReader {
  private readonly found: Partial<ResponseUsage> = {};
  private seen = false;
  private readonly sse: ReturnType<typeof createParser> | undefined;
  private json: Buffer[] | undefined = [];
  private jsonBytes = 0;
  private readonly decoder = new TextDecoder();

  constructor(
    private readonly provider: HarnessProvider,
    contentType: string,
  ) {
    if (contentType.includes('text/event-stream')) {
      this.json = undefined;
      this.sse = createParser({ onEvent: (e) => this.take(e.data) });
    }
  }

  write(chunk: Buffer): void {
    this.bytes += chunk.length;
    if (this.sse) return this.sse.feed(this.decoder.decode(chunk, { stream: true }));
    if (!this.json) return;
    this.jsonBytes += chunk.length;
    if (this.jsonBytes > MAX_JSON_BYTES) this.json = undefined;
    else this.json.push(chunk);
  }

  /** Bytes of the response read so far. */
  bytes = 0;

  /**
   * The usage the response reported, as far as it was read (a response cut short is charged for
   * what it said it used until then); undefined when it reported none.
   */
  end(): ResponseUsage | undefined {
    if (this.json) this.take(Buffer.concat(this.json).toString('utf8'));
    this.json = undefined;
    if (!this.seen) return undefined;
    const u = this.found;
    const total =
      u.totalTokens ??
      (u.inputTokens ?? 0) + (u.outputTokens ?? 0) + (u.cacheReadInputTokens ?? 0) + (u.cacheCreationInputTokens ?? 0);
    return { ...u, totalTokens: total };
  }

  private take(data: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return;
    }
    // Gemini's streamGenerateContent without `alt=sse` answers one JSON array of its chunks.
    for (const item of Array.isArray(parsed) ? parsed : [parsed]) this.takeEvent(obj(item));
  }

  private takeEvent(event: Json): void {
    if (this.provider === 'anthropic') this.anthropic(event);
    else if (this.provider === 'openai') this.openai(event);
    else this.gemini(event);
  }

  private merge(values: Partial<ResponseUsage>): void {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) continue;
      (this.found as Record<string, unknown>)[k] = v;
      if (k !== 'model') this.seen = true;
    }
  }

  /** `message_start` carries the input counts, `message_delta` the cumulative output; a plain reply has both. */
  private anthropic(event: Json): void {
    const message = event.type === 'message_start' ? obj(event.message) : event.type === 'message' ? event : undefined;
    const usage = obj(message ? message.usage : event.type === 'message_delta' ? event.usage : undefined);
    this.merge({
      model: typeof message?.model === 'string' ? message.model : undefined,
      inputTokens: num(usage.input_tokens),
      outputTokens: num(usage.output_tokens),
      cacheReadInputTokens: num(usage.cache_read_input_tokens),
      cacheCreationInputTokens: num(usage.cache_creation_input_tokens),
    });
  }

  /** Responses: `response.completed` (or a plain response); Chat Completions: the last chunk's `usage`. */
  private openai(event: Json): void {
    const response = String(event.type ?? '').startsWith('response.') ? obj(event.response) : event;
    const usage = obj(response.usage);
    this.merge({
      model: typeof response.model === 'string' ? response.model : undefined,
      inputTokens: num(usage.input_tokens ?? usage.prompt_tokens),
      outputTokens: num(usage.output_tokens ?? usage.completion_tokens),
      cachedInputTokens: num(obj(usage.input_tokens_details ?? usage.prompt_tokens_details).cached_tokens),
      reasoningOutputTokens: num(obj(usage.output_tokens_details ?? usage.completion_tokens_details).reasoning_tokens),
      totalTokens: num(usage.total_tokens),
    });
  }

  /** Every chunk may carry `usageMetadata`, cumulative: the last one counts. */
  private gemini(event: Json): void {
    const usage = obj(event.usageMetadata);
    this.merge({
      model: typeof event.modelVersion === 'string' ? event.modelVersion : undefined,
      inputTokens: num(usage.promptTokenCount),
      outputTokens: num(usage.candidatesTokenCount),
      cachedInputTokens: num(usage.cachedContentTokenCount),
      reasoningOutputTokens: num(usage.thoughtsTokenCount),
      totalTokens: num(usage.totalTokenCount),
    });
  }
}
