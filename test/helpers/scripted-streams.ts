import type http from 'node:http';
import type { ChatRequest, ScriptedToolCall } from './scripted-model';

/**
 * The streaming protocols the coding-agent CLIs speak, for the scripted model server: Anthropic
 * Messages with `stream: true` (Claude Code), OpenAI Responses (Codex CLI) and Gemini
 * `streamGenerateContent` (Gemini CLI). Each turns one scripted reply into the provider's events.
 */
export type StreamProtocol = 'anthropic' | 'openai-responses' | 'gemini';

interface Reply {
  text: string;
  totalTokens?: number;
  toolCalls?: (ScriptedToolCall & { id: string })[];
}

const sse = (res: http.ServerResponse, event: string | undefined, data: unknown) =>
  res.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);

export function writeAnthropicStream(res: http.ServerResponse, req: ChatRequest, reply: Reply): void {
  const total = reply.totalTokens ?? 10;
  const input = Math.floor(total / 2);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const ev = (type: string, data: Record<string, unknown>) => sse(res, type, { type, ...data });
  ev('message_start', {
    message: {
      id: `msg_${Math.random().toString(36).slice(2)}`,
      type: 'message',
      role: 'assistant',
      model: req.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: input, output_tokens: 1 },
    },
  });
  let index = 0;
  if (reply.text) {
    ev('content_block_start', { index, content_block: { type: 'text', text: '' } });
    ev('content_block_delta', { index, delta: { type: 'text_delta', text: reply.text } });
    ev('content_block_stop', { index });
    index++;
  }
  for (const call of reply.toolCalls ?? []) {
    ev('content_block_start', { index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } });
    ev('content_block_delta', {
      index,
      delta: { type: 'input_json_delta', partial_json: JSON.stringify(call.arguments) },
    });
    ev('content_block_stop', { index });
    index++;
  }
  const stop = reply.toolCalls?.length ? 'tool_use' : 'end_turn';
  ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: total - input } });
  ev('message_stop', {});
  res.end();
}

export function writeResponsesStream(res: http.ServerResponse, req: ChatRequest, reply: Reply): void {
  const total = reply.totalTokens ?? 10;
  const input = Math.floor(total / 2);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let sequence = 0;
  const ev = (type: string, data: Record<string, unknown>) =>
    sse(res, type, { type, sequence_number: sequence++, ...data });
  const id = `resp_${Math.random().toString(36).slice(2)}`;
  const response = {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    model: req.model,
    status: 'in_progress',
    output: [],
  };
  ev('response.created', { response });
  const items: Record<string, unknown>[] = [];
  if (reply.text) {
    const item = {
      type: 'message',
      id: `msg_${items.length}_${id}`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: reply.text, annotations: [] }],
    };
    ev('response.output_item.added', { output_index: items.length, item: { ...item, content: [] } });
    ev('response.output_text.delta', {
      output_index: items.length,
      item_id: item.id,
      content_index: 0,
      delta: reply.text,
    });
    ev('response.output_item.done', { output_index: items.length, item });
    items.push(item);
  }
  for (const call of reply.toolCalls ?? []) {
    const item = {
      type: 'function_call',
      id: `fc_${call.id}`,
      call_id: call.id,
      name: call.name,
      arguments: JSON.stringify(call.arguments),
      status: 'completed',
    };
    ev('response.output_item.added', { output_index: items.length, item: { ...item, arguments: '' } });
    ev('response.function_call_arguments.delta', {
      output_index: items.length,
      item_id: item.id,
      delta: item.arguments,
    });
    ev('response.output_item.done', { output_index: items.length, item });
    items.push(item);
  }
  ev('response.completed', {
    response: {
      ...response,
      status: 'completed',
      output: items,
      usage: {
        input_tokens: input,
        output_tokens: total - input,
        total_tokens: total,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      },
    },
  });
  res.end();
}

export function writeGeminiStream(res: http.ServerResponse, _req: ChatRequest, reply: Reply, streaming: boolean): void {
  const total = reply.totalTokens ?? 10;
  const input = Math.floor(total / 2);
  const parts = [
    ...(reply.text ? [{ text: reply.text }] : []),
    ...(reply.toolCalls ?? []).map((c) => ({ functionCall: { name: c.name, args: c.arguments } })),
  ];
  const chunk = {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: input, candidatesTokenCount: total - input, totalTokenCount: total },
    modelVersion: 'scripted',
  };
  if (!streaming) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(chunk));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  sse(res, undefined, chunk);
  res.end();
}

type Message = ChatRequest['messages'][number];

/** OpenAI Responses `input` items as chat messages, so scripts see one shape for every protocol. */
export function normaliseResponses(raw: Record<string, unknown>): ChatRequest {
  const items = (raw.input as Record<string, unknown>[] | undefined) ?? [];
  const messages: Message[] = [];
  for (const item of items) {
    if (item.type === 'function_call') {
      messages.push({ role: 'assistant', content: `[tool_use ${String(item.name)} ${String(item.arguments)}]` });
    } else if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output') {
      messages.push({
        role: 'tool',
        content: typeof item.output === 'string' ? item.output : JSON.stringify(item.output),
      });
    } else if (item.role) {
      const content = Array.isArray(item.content)
        ? (item.content as { text?: string }[]).map((c) => c.text ?? '').join('\n')
        : String(item.content ?? '');
      messages.push({ role: item.role === 'developer' ? 'system' : String(item.role), content });
    }
  }
  const tools = ((raw.tools as { name?: string; type?: string }[] | undefined) ?? []).map(
    (t) => t.name ?? t.type ?? '',
  );
  return {
    model: raw.model as string,
    messages,
    system: typeof raw.instructions === 'string' ? raw.instructions : undefined,
    tools,
    protocol: 'openai-responses',
  };
}

/** Gemini `contents` as chat messages. */
export function normaliseGemini(raw: Record<string, unknown>, model: string): ChatRequest {
  type Part = {
    text?: string;
    functionCall?: { name: string; args?: unknown };
    functionResponse?: { response?: unknown };
  };
  const contents = (raw.contents as { role?: string; parts?: Part[] }[] | undefined) ?? [];
  const messages: Message[] = contents.map((c) => {
    const parts = c.parts ?? [];
    if (parts.some((p) => p.functionResponse)) {
      return {
        role: 'tool',
        content: parts.map((p) => JSON.stringify(p.functionResponse?.response ?? p.text ?? '')).join('\n'),
      };
    }
    return {
      role: c.role === 'model' ? 'assistant' : (c.role ?? 'user'),
      content: parts
        .map(
          (p) =>
            p.text ??
            (p.functionCall ? `[tool_use ${p.functionCall.name} ${JSON.stringify(p.functionCall.args)}]` : ''),
        )
        .join('\n'),
    };
  });
  const system = ((raw.systemInstruction as { parts?: Part[] } | undefined)?.parts ?? [])
    .map((p) => p.text ?? '')
    .join('\n');
  const tools = ((raw.tools as { functionDeclarations?: { name: string }[] }[] | undefined) ?? []).flatMap(
    (t) => t.functionDeclarations?.map((d) => d.name) ?? [],
  );
  return { model, messages, system: system || undefined, tools, protocol: 'gemini' };
}
