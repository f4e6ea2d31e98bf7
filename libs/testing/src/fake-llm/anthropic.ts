import { anthropicErrorType } from '@compactor/compaction';
import { AnswerExtras, argumentPieces, FakeProtocol, messagesViews, sseEvent as event, StreamFrames, StreamPlan, streamTrue, textOf } from './protocol';
import type { FakeLlmUsage } from './types';

/** Anthropic Messages: `POST /v1/messages`, streamed as `message_start` … `message_stop` events. */

function anthropicUsage(usage: FakeLlmUsage): Record<string, unknown> {
  return {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    cache_creation_input_tokens: null,
    cache_read_input_tokens: null,
    server_tool_use: null,
    service_tier: 'standard',
  };
}

function answerBody(model: string, text: string, usage: FakeLlmUsage | null, index: number, extra: AnswerExtras): unknown {
  const calls = extra.toolCalls ?? [];
  return {
    id: `msg_fake_${index}`,
    type: 'message',
    role: 'assistant',
    model,
    content: [
      ...(extra.thinking ? [{ type: 'thinking', thinking: extra.thinking.thinking, signature: extra.thinking.signature }] : []),
      ...(text !== '' || calls.length === 0 ? [{ type: 'text', text, citations: null }] : []),
      ...calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.input })),
    ],
    stop_reason: calls.length > 0 ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    ...(usage ? { usage: anthropicUsage(usage) } : {}),
  };
}

function streamFrames(plan: StreamPlan): StreamFrames {
  const { model, index, usage } = plan;
  const startUsage = usage ? anthropicUsage({ inputTokens: usage.inputTokens, outputTokens: 1 }) : undefined;
  const calls = plan.extras?.toolCalls ?? [];
  const thinking = plan.extras?.thinking;
  if (calls.length > 0 || thinking) {
    // Thinking first, then the text (left out when empty and tools are called), then one block per tool call.
    const withText = plan.chunks.join('') !== '' || calls.length === 0;
    const textIndex = thinking ? 1 : 0;
    const firstTool = textIndex + (withText ? 1 : 0);
    const head = [
      event({
        type: 'message_start',
        message: { id: `msg_fake_${index}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, ...(startUsage ? { usage: startUsage } : {}) },
      }),
      ...(thinking
        ? [
            event({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
            event({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: thinking.thinking } }),
            event({ type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: thinking.signature } }),
            event({ type: 'content_block_stop', index: 0 }),
          ]
        : []),
      ...(withText ? [event({ type: 'content_block_start', index: textIndex, content_block: { type: 'text', text: '', citations: null } })] : []),
      event({ type: 'ping' }),
    ];
    return {
      head,
      chunks: withText ? plan.chunks.map((text) => event({ type: 'content_block_delta', index: textIndex, delta: { type: 'text_delta', text } })) : [],
      tail: [
        ...(withText ? [event({ type: 'content_block_stop', index: textIndex })] : []),
        ...calls.flatMap((c, k) => [
          event({ type: 'content_block_start', index: firstTool + k, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } }),
          ...argumentPieces(c.input).map((partial_json) => event({ type: 'content_block_delta', index: firstTool + k, delta: { type: 'input_json_delta', partial_json } })),
          event({ type: 'content_block_stop', index: firstTool + k }),
        ]),
        event({
          type: 'message_delta',
          delta: { stop_reason: calls.length > 0 ? 'tool_use' : 'end_turn', stop_sequence: null },
          usage: usage ? { output_tokens: usage.outputTokens, input_tokens: usage.inputTokens } : { output_tokens: 0 },
        }),
        event({ type: 'message_stop' }),
      ],
    };
  }
  return {
    head: [
      event({
        type: 'message_start',
        message: {
          id: `msg_fake_${index}`,
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          ...(startUsage ? { usage: startUsage } : {}),
        },
      }),
      event({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '', citations: null } }),
      event({ type: 'ping' }),
    ],
    chunks: plan.chunks.map((text) => event({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })),
    tail: [
      event({ type: 'content_block_stop', index: 0 }),
      event({
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null },
        usage: usage ? { output_tokens: usage.outputTokens, input_tokens: usage.inputTokens } : { output_tokens: 0 },
      }),
      event({ type: 'message_stop' }),
    ],
  };
}

/** `tool_result` blocks of the messages' content. */
function toolResults(body: Record<string, unknown>): Map<string, string> {
  const out = new Map<string, string>();
  const messages = Array.isArray(body.messages) ? (body.messages as Array<Record<string, unknown>>) : [];
  for (const m of messages) {
    if (!m || typeof m !== 'object' || !Array.isArray(m.content)) continue;
    for (const block of m.content as Array<Record<string, unknown>>) {
      if (block && block.type === 'tool_result' && typeof block.tool_use_id === 'string') out.set(block.tool_use_id, textOf(block.content));
    }
  }
  return out;
}

export const anthropicProtocol: FakeProtocol = {
  views: (body) => messagesViews(body, body.system),
  wantsStream: streamTrue,
  answerBody,
  streamFrames,
  streamContentType: 'text/event-stream; charset=utf-8',
  missingFieldsBody: (model) => ({ id: 'msg_fake_missing', type: 'message', role: 'assistant', model, content: [], stop_reason: 'end_turn' }),
  errorBody: (status, message) => ({ type: 'error', error: { type: anthropicErrorType(status), message } }),
  toolResults,
};
