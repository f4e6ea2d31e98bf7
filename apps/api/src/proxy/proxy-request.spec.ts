import { ProxyRequest } from './proxy-request';
import { LargeJsonParser } from '../body/large-json-body';

const body = (input: unknown[]) => Buffer.from(JSON.stringify({ model: 'gpt-5.5', input, store: false }));
const developer = { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Be careful.' }] };
const user = (text: string) => ({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
const call = (id: string) => ({ type: 'function_call', call_id: id, name: 'exec_command', arguments: '{"cmd":"ls"}' });
const output = (id: string, text: string) => ({ type: 'function_call_output', call_id: id, output: text });

describe('ProxyRequest, Responses items', () => {
  it('reuses the items an earlier request parsed where the bytes are the same, and parses the rest', () => {
    const first = ProxyRequest.parse('responses', body([developer, user('list the files'), call('c1'), output('c1', 'a.txt')]));
    const parsed = first.parsedItems!;
    expect(parsed.items).toHaveLength(4);
    const next = ProxyRequest.parse('responses', body([developer, user('list the files'), call('c1'), output('c1', 'a.txt'), user('and now?')]), parsed);
    const items = next.parsedItems!.items!;
    expect(items.slice(0, 4).every((item, k) => item === parsed.items![k])).toBe(true);
    expect(items[4]).toEqual(user('and now?'));
    // The same messages either way.
    const fresh = ProxyRequest.parse('responses', body([developer, user('list the files'), call('c1'), output('c1', 'a.txt'), user('and now?')]));
    expect(Array.from({ length: next.messageCount }, (_, i) => next.message(i))).toEqual(Array.from({ length: fresh.messageCount }, (_, i) => fresh.message(i)));
  });

  it('reuses them when a field before `input` changed (stream sent on every other turn)', () => {
    const items = [developer, user('list the files'), call('c1'), output('c1', 'a.txt')];
    const first = ProxyRequest.parse('responses', Buffer.from(JSON.stringify({ model: 'gpt-5.5', input: items })));
    const next = ProxyRequest.parse('responses', Buffer.from(JSON.stringify({ model: 'gpt-5.5', stream: true, input: [...items, user('next')] })), first.parsedItems);
    expect(next.parsedItems!.items!.slice(0, 4).every((item, k) => item === first.parsedItems!.items![k])).toBe(true);
    expect(next.parsedItems!.items![4]).toEqual(user('next'));
  });

  it('parses again an item whose bytes changed, even at the same offsets', () => {
    const first = ProxyRequest.parse('responses', body([user('aaaa'), call('c1'), output('c1', 'one')]));
    // Same lengths, so the same ranges: only the bytes tell the items apart.
    const next = ProxyRequest.parse('responses', body([user('bbbb'), call('c1'), output('c1', 'two')]), first.parsedItems);
    expect(next.parsedItems!.items!).toEqual([user('bbbb'), call('c1'), output('c1', 'two')]);
    expect(next.turn(0).blocks).toEqual([expect.objectContaining({ type: 'text', text: 'bbbb' })]);
  });

  it('gives the leading developer items as the client sent their bytes', () => {
    const raw = Buffer.from(`{"model":"gpt-5.5","input":[ ${JSON.stringify(developer)} ,\n ${JSON.stringify(developer)}, ${JSON.stringify(user('hi'))}]}`);
    const request = ProxyRequest.parse('responses', raw);
    expect(request.leading).toBe(1);
    expect(JSON.parse(`[${request.rawJson(0, request.leading)}]`)).toEqual([developer, developer]);
    expect(request.rawJson(0, 0)).toBe('');
    const chat = ProxyRequest.parse('openai', Buffer.from(JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'system', content: 'S' }, { role: 'user', content: 'U' }] })));
    expect(chat.rawJson(0, chat.leading)).toBe('{"role":"system","content":"S"}');
  });
});

describe('ProxyRequest, large messages parsed on the JSON worker thread', () => {
  const parser = new LargeJsonParser();
  afterAll(() => parser.close());
  const anthropic = (messages: unknown[]) => Buffer.from(JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages }));
  const big = 'line of log output\n'.repeat(1000);
  const conversation = [
    { role: 'user', content: 'run it' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'make' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: big }] },
  ];
  const messagesOf = (r: ProxyRequest) => Array.from({ length: r.messageCount }, (_, i) => r.message(i));

  it('reads a large last message through the worker and gives what parse gives', async () => {
    const bytes = anthropic(conversation);
    const asked: number[] = [];
    const read = await ProxyRequest.read('anthropic', bytes, undefined, 1000, (b) => (asked.push(b.length), parser.parse(b)));
    expect(asked).toHaveLength(1);
    expect(asked[0]).toBeGreaterThan(big.length);
    expect(read.prefill).toBe(false);
    expect(messagesOf(read)).toEqual(messagesOf(ProxyRequest.parse('anthropic', bytes)));
    // Parsed once: raw(i) gives the worker's value, not a new parse.
    expect(read.raw(2)).toBe(read.raw(2));
    expect(read.raw(2)).toEqual(conversation[2]);
  });

  it('leaves small messages to parse, and a message the worker refuses to raw(i)', async () => {
    const asked: number[] = [];
    const count = (b: Buffer) => (asked.push(b.length), parser.parse(b));
    await ProxyRequest.read('anthropic', anthropic(conversation), undefined, 1 << 20, count);
    expect(asked).toEqual([]);
    // A worker that gives nothing back: the message is parsed on use, and the same as parse.
    const refused = await ProxyRequest.read('anthropic', anthropic(conversation), undefined, 1000, () => Promise.resolve({ ok: false }));
    expect(messagesOf(refused)).toEqual(messagesOf(ProxyRequest.parse('anthropic', anthropic(conversation))));
  });

  it('reads large Responses items through the worker, but not those an earlier request parsed from the same bytes', async () => {
    const asked: number[] = [];
    const count = (b: Buffer) => (asked.push(b.length), parser.parse(b));
    const items = [user('run it'), call('c1'), output('c1', big)];
    const first = await ProxyRequest.read('responses', body(items), undefined, 1000, count);
    expect(asked).toHaveLength(1);
    expect(messagesOf(first)).toEqual(messagesOf(ProxyRequest.parse('responses', body(items))));
    const next = await ProxyRequest.read('responses', body([...items, user('and now?'), call('c2'), output('c2', `${big}!`)]), first.parsedItems, 1000, count);
    expect(asked).toHaveLength(2); // only the new large output
    expect(next.parsedItems!.items![2]).toBe(first.parsedItems!.items![2]);
    expect(messagesOf(next)).toEqual(messagesOf(ProxyRequest.parse('responses', body([...items, user('and now?'), call('c2'), output('c2', `${big}!`)]))));
  });

  it('preparses large messages before the last, and a trailing assistant message is still a prefill', async () => {
    const withPrefill = [...conversation, { role: 'user', content: 'and now?' }, { role: 'assistant', content: big }];
    const read = await ProxyRequest.read('anthropic', anthropic(withPrefill), undefined, 1000, (b) => parser.parse(b));
    expect(read.prefill).toBe(true);
    expect(read.largeUnparsed(1000)).toEqual([2]); // the prefill (index 4) is not conversation, and is parsed
    await read.preparse([2], (b) => parser.parse(b));
    expect(read.largeUnparsed(1000)).toEqual([]);
    expect(messagesOf(read)).toEqual(messagesOf(ProxyRequest.parse('anthropic', anthropic(withPrefill))));
  });
});
