import { anthropicStreamAssembler, jsonAnswerAssembler, openaiStreamAssembler, SseReader } from './answer-assembler';

/** Feeds `text` in pieces of `size` bytes, splitting events, lines and multi-byte characters anywhere. */
function feed(assembler: { push(chunk: Buffer): void }, text: string, size: number): void {
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i += size) assembler.push(bytes.subarray(i, i + size));
}

const anthropicEvents = (events: Array<Record<string, unknown>>) => events.map((e) => `event: ${String(e.type)}\ndata: ${JSON.stringify(e)}\n\n`).join('');

const anthropicStream = anthropicEvents([
  { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [] } },
  { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Plan: read both — ' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'then compare.' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQBCkYIARgC' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
  { type: 'ping' },
  { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Reading ' } },
  { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'both ✓' } },
  { type: 'content_block_stop', index: 1 },
  { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_a', name: 'read', input: {} } },
  { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"path":' } },
  { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '"a.ts"}' } },
  { type: 'content_block_stop', index: 2 },
  { type: 'content_block_start', index: 3, content_block: { type: 'tool_use', id: 'toolu_b', name: 'list', input: {} } },
  { type: 'content_block_stop', index: 3 },
  { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 30 } },
  { type: 'message_stop' },
]);

describe('answer assemblers', () => {
  it.each([1, 7, 64, 100_000])('Anthropic: thinking with its signature, text and parallel tool calls, whatever the chunking (%i-byte chunks)', (size) => {
    const assembler = anthropicStreamAssembler();
    feed(assembler, anthropicStream, size);
    expect(assembler.message()).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Plan: read both — then compare.', signature: 'EqQBCkYIARgC' },
        { type: 'text', text: 'Reading both ✓' },
        { type: 'tool_use', id: 'toolu_a', name: 'read', input: { path: 'a.ts' } },
        { type: 'tool_use', id: 'toolu_b', name: 'list', input: {} },
      ],
    });
  });

  it('Anthropic: nothing is recorded before message_stop or after an error event', () => {
    const cut = anthropicStreamAssembler();
    feed(cut, anthropicStream.slice(0, anthropicStream.indexOf('event: message_stop')), 50);
    expect(cut.message()).toBeUndefined();
    const failed = anthropicStreamAssembler();
    feed(failed, anthropicStream.replace('event: message_stop', `event: error\ndata: {"type":"error","error":{"type":"overloaded_error"}}\n\nevent: message_stop`), 50);
    expect(failed.message()).toBeUndefined();
  });

  it('OpenAI: content and parallel tool calls assembled by index, with CRLF event separators', () => {
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\r\n\r\n`;
    const text = [
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Checking ' }),
      chunk({ content: 'both.' }),
      chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'read', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'read', arguments: '{"path"' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"path":"a.ts"}' } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: ':"b.ts"}' } }] }),
      chunk({}, 'tool_calls'),
      'data: [DONE]\r\n\r\n',
    ].join('');
    const assembler = openaiStreamAssembler();
    feed(assembler, text, 13);
    expect(assembler.message()).toEqual({
      role: 'assistant',
      content: 'Checking both.',
      tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'read', arguments: '{"path":"a.ts"}' } },
        { id: 'call_b', type: 'function', function: { name: 'read', arguments: '{"path":"b.ts"}' } },
      ],
    });
  });

  it('non-streamed answers: the message as the provider sent it', () => {
    const anthropic = jsonAnswerAssembler('anthropic');
    feed(anthropic, JSON.stringify({ id: 'm', type: 'message', content: [{ type: 'text', text: 'hi', citations: null }] }), 5);
    expect(anthropic.message()).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'hi', citations: null }] });
    const openai = jsonAnswerAssembler('openai');
    feed(openai, JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'hi', refusal: null } }] }), 5);
    expect(openai.message()).toEqual({ role: 'assistant', content: 'hi', refusal: null });
  });

  it("reads the upstream's reported prompt tokens (Anthropic's cache reads and writes included), once the answer completed", () => {
    const withUsage = anthropicStream.replace(
      '"content":[]}}',
      '"content":[],"usage":{"input_tokens":120,"cache_creation_input_tokens":1000,"cache_read_input_tokens":30000,"output_tokens":1}}}',
    );
    const streamed = anthropicStreamAssembler();
    feed(streamed, withUsage.slice(0, withUsage.indexOf('event: message_stop')), 40);
    expect(streamed.inputTokens()).toBeUndefined();
    feed(streamed, withUsage.slice(withUsage.indexOf('event: message_stop')), 40);
    expect(streamed.inputTokens()).toBe(31_120);
    const none = anthropicStreamAssembler();
    feed(none, anthropicStream, 64);
    expect(none.inputTokens()).toBeUndefined();

    const openai = openaiStreamAssembler();
    feed(
      openai,
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'ok' }, finish_reason: 'stop' }] })}\n\ndata: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 4_321, completion_tokens: 2 } })}\n\ndata: [DONE]\n\n`,
      9,
    );
    expect(openai.inputTokens()).toBe(4_321);

    const json = jsonAnswerAssembler('anthropic');
    feed(json, JSON.stringify({ content: [{ type: 'text', text: 'hi' }], usage: { input_tokens: 50, cache_read_input_tokens: null, output_tokens: 3 } }), 7);
    expect(json.inputTokens()).toBe(50);
    const jsonOpenai = jsonAnswerAssembler('openai');
    feed(jsonOpenai, JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'hi' } }], usage: { prompt_tokens: 77 } }), 7);
    expect(jsonOpenai.inputTokens()).toBe(77);
    expect(jsonOpenai.message()).toEqual({ role: 'assistant', content: 'hi' });
  });

  it('SseReader: comments ignored, multi-line data joined', () => {
    const events: Array<[string | undefined, string]> = [];
    const reader = new SseReader((e, d) => events.push([e, d]));
    feed(reader, ': keep-alive\n\nevent: x\ndata: a\ndata: b\n\ndata:c\n\n', 3);
    expect(events).toEqual([
      ['x', 'a\nb'],
      [undefined, 'c'],
    ]);
  });
});
