/**
 * Anthropic `role: "system"` entries of `messages` (mid-conversation system messages, sent by
 * Claude Code 2.1 with Claude Opus 4.8): parsed, validated, kept in place and written back as
 * received; converted to OpenAI in place; moved to the top-level `system` only where Anthropic's
 * placement rules would refuse them.
 */
import { CanonicalMessage } from './canonical';
import { anthropicSystemTurn, inConversationSystemsInPlace, parseAnthropicMessages, toAnthropic } from './anthropic';
import { toOpenAI } from './openai';
import { anthropicTurns, CONTINUATION_TURN, makeProviderValid, providerValidityProblems } from './provider-valid';
import { validateSequence } from './sequence';

const json = <T>(v: T): T => JSON.parse(JSON.stringify(v));

function parse(messages: unknown[]): CanonicalMessage[] {
  const parsed = parseAnthropicMessages(json(messages), 'messages');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

/**
 * A Claude Code 2.1 request's messages (claude-opus-4-8, beta `mid-conversation-system-2026-04-07`):
 * a system reminder after the user's prompt (with a cache marker), a per-turn `output_config`
 * with empty content, a tool change (`tool_addition`) and a `clear_at` reminder.
 */
const claudeCodeMessages = [
  { role: 'user', content: [{ type: 'text', text: 'List the TypeScript files and count the TODOs.' }] },
  {
    role: 'system',
    content: [{ type: 'text', text: '<system-reminder>\nToday is 2026-07-01. The working directory is /repo.\n</system-reminder>', cache_control: { type: 'ephemeral' } }],
  },
  {
    role: 'assistant',
    content: [
      { type: 'text', text: 'Searching.' },
      { type: 'tool_use', id: 'toolu_01Grep', name: 'Grep', input: { pattern: 'TODO', path: 'src', output_mode: 'count', '-n': true } },
    ],
  },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01Grep', content: 'src/a.ts:3' }] },
  { role: 'system', content: [], output_config: { effort: 'low' } },
  { role: 'assistant', content: [{ type: 'text', text: 'One TODO, in src/a.ts.' }] },
  { role: 'user', content: 'Thanks. Now fix it.' },
  {
    role: 'system',
    content: [
      { type: 'tool_addition', tool: { type: 'tool_definition', definition: { name: 'Edit', input_schema: { type: 'object' } } } },
      { type: 'text', text: 'Reminder: run the tests after editing.' },
    ],
    clear_at: 'next_user_message',
  },
];

describe('Anthropic in-conversation system messages', () => {
  it('parse in place as system messages that remember they sit in the conversation', () => {
    const parsed = parse(claudeCodeMessages);
    expect(parsed.map((m) => m.role)).toEqual(['user', 'system', 'assistant', 'user', 'system', 'assistant', 'user', 'system']);
    expect(parsed.filter((m) => m.role === 'system').every((m) => m.inConversation === true && m.origin === 'anthropic')).toBe(true);
    expect(parsed[4]).toMatchObject({ blocks: [], extras: { output_config: { effort: 'low' } } });
    expect(parsed[7].blocks[0]).toMatchObject({ type: 'opaque', provider: 'anthropic' });
    expect(parsed[7].extras).toEqual({ clear_at: 'next_user_message' });
  });

  it('pass the sequence checks; tool blocks in them are refused naming the field', () => {
    const parsed = parse(claudeCodeMessages);
    expect(validateSequence({ lastRole: null, openToolUseIds: [], seenToolUseIds: new Set() }, parsed, 'messages').errors).toEqual([]);
    const bad = parse([
      { role: 'user', content: 'hi' },
      { role: 'system', content: [{ type: 'tool_use', id: 'toolu_x', name: 'Bash', input: {} }] },
    ]);
    expect(validateSequence({ lastRole: null, openToolUseIds: [], seenToolUseIds: new Set() }, bad, 'messages').errors).toEqual([
      { field: 'messages[1].content[0]', message: 'a system message takes text blocks only (got tool_use)' },
    ]);
  });

  it('an unknown role is refused naming it', () => {
    const parsed = parseAnthropicMessages([{ role: 'user', content: 'x' }, { role: 'developer', content: 'y' }], 'messages');
    expect(parsed.ok ? [] : parsed.errors).toEqual([{ field: 'messages[1].role', message: "must be 'user', 'assistant' or 'system'" }]);
  });

  it('go back to Anthropic exactly where and as they were (same JSON, no top-level system added)', () => {
    const out = toAnthropic(parse(claudeCodeMessages));
    expect(out.system).toBeUndefined();
    expect(out.messages).toEqual(claudeCodeMessages);
    expect(JSON.stringify(out.messages)).toBe(JSON.stringify(claudeCodeMessages));
  });

  it('keep the top-level system prompt apart', () => {
    const system: CanonicalMessage = { role: 'system', origin: 'anthropic', contentForm: 'string', blocks: [{ type: 'text', text: 'You are Claude Code.' }] };
    const out = toAnthropic([system, ...parse(claudeCodeMessages.slice(0, 3))]);
    expect(out.system).toBe('You are Claude Code.');
    expect(out.messages).toEqual(claudeCodeMessages.slice(0, 3));
  });

  it('become OpenAI system messages in place (what has no OpenAI form is left out)', () => {
    const out = toOpenAI(parse(claudeCodeMessages)) as Array<{ role: string; content?: unknown }>;
    expect(out.map((m) => m.role)).toEqual(['user', 'system', 'assistant', 'tool', 'assistant', 'user', 'system']);
    // One text crosses as a string (docs/providers.md); cache_control and the tool change stay Anthropic's.
    expect(out[1]).toEqual({ role: 'system', content: '<system-reminder>\nToday is 2026-07-01. The working directory is /repo.\n</system-reminder>' });
    expect(out[6]).toEqual({ role: 'system', content: 'Reminder: run the tests after editing.' });
  });

  it('join the top-level system only where Anthropic would refuse them (their user turn gone)', () => {
    const parsed = parse(claudeCodeMessages);
    // The user turn before the first reminder was summarized away: the reminder now follows nothing.
    const out = toAnthropic(parsed.slice(1, 6));
    expect(out.system).toEqual([
      { type: 'text', text: '<system-reminder>\nToday is 2026-07-01. The working directory is /repo.\n</system-reminder>', cache_control: { type: 'ephemeral' } },
    ]);
    expect((out.messages as Array<{ role: string }>).map((m) => m.role)).toEqual(['assistant', 'user', 'system', 'assistant']);
    // Two in a row: the first goes to `system`, the second stays.
    const twice = toAnthropic([parsed[6], parsed[1], parsed[7]]);
    expect((twice.messages as Array<{ role: string }>).map((m) => m.role)).toEqual(['user', 'system']);
    expect(twice.system).toEqual([expect.objectContaining({ text: expect.stringContaining('Today is') })]);
    // One with no text (an output_config, a tool change alone) has no place in `system`: it is left out.
    expect(toAnthropic([parsed[4], parsed[5]]).system).toBeUndefined();
    // Followed by a user turn: not where Anthropic takes it.
    const beforeUser = toAnthropic([parsed[0], parsed[1], parsed[6]]);
    expect(beforeUser.system).toEqual([expect.objectContaining({ type: 'text' })]);
    expect(inConversationSystemsInPlace(parsed)).toBe(true);
    expect(inConversationSystemsInPlace(parsed.slice(1, 6))).toBe(false);
    expect(inConversationSystemsInPlace([parsed[0], parsed[1], parsed[6]])).toBe(false);
  });

  it('keep an empty one (it carries output_config) and are written alone as received', () => {
    const parsed = parse(claudeCodeMessages);
    const valid = makeProviderValid(parsed);
    expect(valid.dropped).toEqual([]);
    expect(valid.messages).toEqual(parsed);
    expect(providerValidityProblems(valid.messages)).toEqual([]);
    expect(anthropicSystemTurn(parsed[4])).toEqual(claudeCodeMessages[4]);
  });

  it('between a tool call and its result, never break the pair: the result comes first', () => {
    const messages: CanonicalMessage[] = [
      { role: 'user', blocks: [{ type: 'text', text: 'go' }] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'call_1', name: 'Bash', input: { command: 'ls' } }] },
      { role: 'system', inConversation: true, origin: 'anthropic', blocks: [{ type: 'text', text: 'Be brief.' }] },
      { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'call_1', content: 'a.ts', isError: false }] },
      { role: 'assistant', blocks: [{ type: 'text', text: 'done' }] },
    ];
    const valid = makeProviderValid(messages);
    expect(valid.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'system', 'assistant']);
    expect(valid.sources).toEqual([0, 1, 3, 2, 4]);
    expect(valid.dropped).toEqual([]);
    expect(providerValidityProblems(valid.messages)).toEqual([]);
    // Both providers' requests keep the pair together, and the system message stays in the conversation.
    expect((toAnthropic(valid.messages).messages as Array<{ role: string }>).map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'system', 'assistant']);
    expect((toOpenAI(valid.messages) as Array<{ role: string }>).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'system', 'assistant']);
  });

  it('after a compaction, the continuation turn goes before one that would come first', () => {
    const parsed = parse(claudeCodeMessages);
    const turns = anthropicTurns([parsed[1], parsed[2], parsed[3]]);
    expect(turns[0]).toBe(CONTINUATION_TURN);
    expect(turns.slice(1)).toEqual([parsed[1], parsed[2], parsed[3]]);
    expect(inConversationSystemsInPlace(turns)).toBe(true);
    expect(toAnthropic(turns).system).toBeUndefined();
  });
});
