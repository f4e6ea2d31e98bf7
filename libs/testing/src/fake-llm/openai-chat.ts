import { openaiErrorType } from '@compactor/compaction';
import { AnswerExtras, argumentPieces, CREATED, FakeProtocol, messagesViews, StreamFrames, StreamPlan, streamTrue, textOf } from './protocol';
import type { FakeLlmUsage } from './types';

/**
 * OpenAI Chat Completions: `POST /v1/chat/completions`, streamed as `data:` chunks ending in `[DONE]` (with a usage
 * chunk when `stream_options.include_usage`).
 */

function answerBody(model: string, text: string, usage: FakeLlmUsage | null, index: number, extra: AnswerExtras): unknown {
  const calls = extra.toolCalls ?? [];
  return {
    id: `chatcmpl-fake-${index}`,
    object: 'chat.completion',
    created: CREATED,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: calls.length > 0 && text === '' ? null : text,
          refusal: null,
          annotations: [],
          ...(calls.length > 0 ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input) } })) } : {}),
        },
        logprobs: null,
        finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
      },
    ],
    ...(usage ? { usage: { prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.inputTokens + usage.outputTokens } } : {}),
    system_fingerprint: null,
  };
}

function streamFrames(plan: StreamPlan): StreamFrames {
  const { model, index, usage } = plan;
  const id = `chatcmpl-fake-${index}`;
  const withUsage = plan.includeUsage ? { usage: null } : {};
  const chunk = (choices: unknown[], extra: Record<string, unknown> = withUsage): string =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: CREATED, model, system_fingerprint: null, choices, ...extra })}\n\n`;
  const calls = plan.extras?.toolCalls ?? [];
  const tail = [
    ...calls.flatMap((c, k) => [
      chunk([{ index: 0, delta: { tool_calls: [{ index: k, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }, logprobs: null, finish_reason: null }]),
      ...argumentPieces(c.input).map((piece) => chunk([{ index: 0, delta: { tool_calls: [{ index: k, function: { arguments: piece } }] }, logprobs: null, finish_reason: null }])),
    ]),
    chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: calls.length > 0 ? 'tool_calls' : 'stop' }]),
  ];
  if (plan.includeUsage) {
    const u = usage ?? { inputTokens: 0, outputTokens: 0 };
    tail.push(chunk([], { usage: { prompt_tokens: u.inputTokens, completion_tokens: u.outputTokens, total_tokens: u.inputTokens + u.outputTokens } }));
  }
  tail.push('data: [DONE]\n\n');
  return {
    head: [chunk([{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }])],
    chunks: plan.chunks.map((content) => chunk([{ index: 0, delta: { content }, logprobs: null, finish_reason: null }])),
    tail,
  };
}

/** `tool` messages by `tool_call_id`. */
function toolResults(body: Record<string, unknown>): Map<string, string> {
  const out = new Map<string, string>();
  const messages = Array.isArray(body.messages) ? (body.messages as Array<Record<string, unknown>>) : [];
  for (const m of messages) if (m && typeof m === 'object' && m.role === 'tool' && typeof m.tool_call_id === 'string') out.set(m.tool_call_id, textOf(m.content));
  return out;
}

export const openaiChatProtocol: FakeProtocol = {
  views: (body) => messagesViews(body),
  wantsStream: streamTrue,
  answerBody,
  streamFrames,
  streamContentType: 'text/event-stream; charset=utf-8',
  missingFieldsBody: (model) => ({ id: 'chatcmpl-fake-missing', object: 'chat.completion', created: CREATED, model, choices: [] }),
  errorBody: (status, message) => ({ error: { message, ...openaiErrorType(status), param: null } }),
  toolResults,
};
