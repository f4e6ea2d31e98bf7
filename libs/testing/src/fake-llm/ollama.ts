import { AnswerExtras, CREATED_AT, FakeProtocol, messagesViews, StreamFrames, StreamPlan } from './protocol';
import type { FakeLlmUsage } from './types';

/** Ollama native: `POST /api/chat`, streamed as NDJSON unless `stream: false` (its default is to stream). */

function answerBody(model: string, text: string, usage: FakeLlmUsage | null, _index: number, _extra: AnswerExtras): unknown {
  return {
    model,
    created_at: CREATED_AT,
    message: { role: 'assistant', content: text },
    done: true,
    done_reason: 'stop',
    total_duration: 1_000_000,
    load_duration: 1000,
    ...(usage ? { prompt_eval_count: usage.inputTokens, prompt_eval_duration: 1000, eval_count: usage.outputTokens, eval_duration: 1000 } : {}),
  };
}

function streamFrames(plan: StreamPlan): StreamFrames {
  const { model, usage } = plan;
  const line = (data: Record<string, unknown>): string => `${JSON.stringify(data)}\n`;
  return {
    head: [],
    chunks: plan.chunks.map((content) => line({ model, created_at: CREATED_AT, message: { role: 'assistant', content }, done: false })),
    tail: [
      line({
        model,
        created_at: CREATED_AT,
        message: { role: 'assistant', content: '' },
        done: true,
        done_reason: 'stop',
        total_duration: 1_000_000,
        load_duration: 1000,
        ...(usage ? { prompt_eval_count: usage.inputTokens, prompt_eval_duration: 1000, eval_count: usage.outputTokens, eval_duration: 1000 } : {}),
      }),
    ],
  };
}

export const ollamaProtocol: FakeProtocol = {
  views: (body) => messagesViews(body),
  wantsStream: (body) => !(body && typeof body === 'object' && (body as { stream?: unknown }).stream === false),
  answerBody,
  streamFrames,
  streamContentType: 'application/x-ndjson',
  missingFieldsBody: (model) => ({ model, created_at: CREATED_AT, done: true }),
  errorBody: (_status, message) => ({ error: message }),
  toolResults: () => new Map(),
};
