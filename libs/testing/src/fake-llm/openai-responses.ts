import { openaiErrorType } from '@compactor/compaction';
import { AnswerExtras, argumentPieces, CREATED, FakeProtocol, sseEvent, StreamFrames, StreamPlan, streamTrue, textOf } from './protocol';
import type { FakeLlmRequest, FakeLlmUsage } from './types';

/**
 * OpenAI Responses: `POST /v1/responses`, streamed as `response.*` server-sent events (`response.created`,
 * `response.output_item.added`/`done`, `response.output_text.delta`, `response.function_call_arguments.delta`, …,
 * `response.completed` with the whole response). Tool calls are `function_call` items (`custom_tool_call` items for a call
 * scripted `custom: true`, whose input streams as `response.custom_tool_call_input.delta`), thinking a `reasoning` item whose
 * `encrypted_content` is the scripted signature (as with `store: false` and `include: ['reasoning.encrypted_content']`).
 */

type Item = Record<string, unknown>;

function usageOf(usage: FakeLlmUsage | null): Record<string, unknown> {
  if (!usage) return {};
  return {
    usage: {
      input_tokens: usage.inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: usage.outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.inputTokens + usage.outputTokens,
    },
  };
}

/** The answer's output items: reasoning, the text message (left out when empty and tools are called), then one function_call per call. */
function outputItems(text: string, index: number, extra: AnswerExtras): { reasoning?: Item; message?: Item; calls: Item[] } {
  const calls = extra.toolCalls ?? [];
  return {
    ...(extra.thinking ? { reasoning: { id: `rs_fake_${index}`, type: 'reasoning', summary: [{ type: 'summary_text', text: extra.thinking.thinking }], encrypted_content: extra.thinking.signature } } : {}),
    ...(text !== '' || calls.length === 0
      ? { message: { id: `msg_fake_${index}`, type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [], logprobs: [] }] } }
      : {}),
    calls: calls.map((c, k) =>
      c.custom
        ? { id: `ctc_fake_${index}_${k}`, type: 'custom_tool_call', status: 'completed', call_id: c.id, name: c.name, input: typeof c.input === 'string' ? c.input : JSON.stringify(c.input) }
        : { id: `fc_fake_${index}_${k}`, type: 'function_call', status: 'completed', arguments: JSON.stringify(c.input), call_id: c.id, name: c.name },
    ),
  };
}

function response(model: string, index: number, status: string, output: Item[], usage: FakeLlmUsage | null): Item {
  return {
    id: `resp_fake_${index}`,
    object: 'response',
    created_at: CREATED,
    status,
    error: null,
    incomplete_details: null,
    model,
    output,
    parallel_tool_calls: true,
    store: false,
    ...(status === 'completed' ? usageOf(usage) : {}),
  };
}

function answerBody(model: string, text: string, usage: FakeLlmUsage | null, index: number, extra: AnswerExtras): unknown {
  const items = outputItems(text, index, extra);
  const output = [...(items.reasoning ? [items.reasoning] : []), ...(items.message ? [items.message] : []), ...items.calls];
  return response(model, index, 'completed', output, usage);
}

function streamFrames(plan: StreamPlan): StreamFrames {
  const { model, index, usage } = plan;
  let sequence = 0;
  const event = (data: Item): string => sseEvent({ ...data, sequence_number: sequence++ });
  const text = plan.chunks.join('');
  const items = outputItems(text, index, plan.extras ?? {});
  const output: Item[] = [];
  const head: string[] = [event({ type: 'response.created', response: response(model, index, 'in_progress', [], null) }), event({ type: 'response.in_progress', response: response(model, index, 'in_progress', [], null) })];
  if (items.reasoning) {
    const at = output.length;
    output.push(items.reasoning);
    head.push(event({ type: 'response.output_item.added', output_index: at, item: { ...items.reasoning, summary: [] } }), event({ type: 'response.output_item.done', output_index: at, item: items.reasoning }));
  }
  const chunks: string[] = [];
  const tail: string[] = [];
  const message = items.message;
  if (message) {
    const at = output.length;
    output.push(message);
    const id = message.id;
    const part = { type: 'output_text', text: '', annotations: [], logprobs: [] };
    head.push(
      event({ type: 'response.output_item.added', output_index: at, item: { ...message, status: 'in_progress', content: [] } }),
      event({ type: 'response.content_part.added', item_id: id, output_index: at, content_index: 0, part }),
    );
    chunks.push(...plan.chunks.map((delta) => event({ type: 'response.output_text.delta', item_id: id, output_index: at, content_index: 0, delta, logprobs: [] })));
    tail.push(
      event({ type: 'response.output_text.done', item_id: id, output_index: at, content_index: 0, text, logprobs: [] }),
      event({ type: 'response.content_part.done', item_id: id, output_index: at, content_index: 0, part: { ...part, text } }),
      event({ type: 'response.output_item.done', output_index: at, item: message }),
    );
  }
  for (const [k, call] of items.calls.entries()) {
    const at = output.length;
    output.push(call);
    const input = plan.extras?.toolCalls?.[k]?.input;
    if (call.type === 'custom_tool_call') {
      // A freeform tool's input streams as `response.custom_tool_call_input.delta` events, the raw text cut in two.
      const text = call.input as string;
      const cut = Math.floor(text.length / 2);
      tail.push(
        event({ type: 'response.output_item.added', output_index: at, item: { ...call, status: 'in_progress', input: '' } }),
        ...(cut > 0 ? [text.slice(0, cut), text.slice(cut)] : [text]).map((delta) => event({ type: 'response.custom_tool_call_input.delta', item_id: call.id, output_index: at, delta })),
        event({ type: 'response.custom_tool_call_input.done', item_id: call.id, output_index: at, input: text }),
        event({ type: 'response.output_item.done', output_index: at, item: call }),
      );
      continue;
    }
    tail.push(
      event({ type: 'response.output_item.added', output_index: at, item: { ...call, status: 'in_progress', arguments: '' } }),
      ...argumentPieces(input).map((delta) => event({ type: 'response.function_call_arguments.delta', item_id: call.id, output_index: at, delta })),
      event({ type: 'response.function_call_arguments.done', item_id: call.id, output_index: at, arguments: call.arguments }),
      event({ type: 'response.output_item.done', output_index: at, item: call }),
    );
  }
  tail.push(event({ type: 'response.completed', response: response(model, index, 'completed', output, usage) }));
  return { head, chunks, tail };
}

/** The `input` items (a string is one user message). */
function itemsOf(body: Record<string, unknown>): Item[] {
  if (typeof body.input === 'string') return [{ type: 'message', role: 'user', content: body.input }];
  return Array.isArray(body.input) ? (body.input as unknown[]).filter((i): i is Item => !!i && typeof i === 'object' && !Array.isArray(i)) : [];
}

function views(body: Record<string, unknown>): Pick<FakeLlmRequest, 'system' | 'userContent' | 'userTurns' | 'model'> {
  const messages = itemsOf(body).filter((i) => i.type === undefined || i.type === 'message');
  const systems = messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => textOf(m.content));
  if (typeof body.instructions === 'string') systems.unshift(body.instructions);
  const users = messages.filter((m) => m.role === 'user').map((m) => textOf(m.content));
  return {
    model: typeof body.model === 'string' ? body.model : undefined,
    system: systems.length > 0 ? systems.join('\n') : undefined,
    userContent: users.length > 0 ? users.join('\n') : undefined,
    userTurns: users.length,
  };
}

/** `function_call_output` / `custom_tool_call_output` items by `call_id`. */
function toolResults(body: Record<string, unknown>): Map<string, string> {
  const out = new Map<string, string>();
  for (const item of itemsOf(body)) {
    if ((item.type === 'function_call_output' || item.type === 'custom_tool_call_output') && typeof item.call_id === 'string') out.set(item.call_id, textOf(item.output));
  }
  return out;
}

export const openaiResponsesProtocol: FakeProtocol = {
  views,
  wantsStream: streamTrue,
  answerBody,
  streamFrames,
  streamContentType: 'text/event-stream; charset=utf-8',
  missingFieldsBody: (model) => response(model, 0, 'completed', [], null),
  errorBody: (status, message) => ({ error: { message, ...openaiErrorType(status), param: null } }),
  toolResults,
};
