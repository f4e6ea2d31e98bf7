import { CanonicalMessage } from '../messages/canonical';
import { toolNameLookup } from './tool-pairs';
import { SessionMessage } from './types';

const call = (id: string, name: string): CanonicalMessage => ({ role: 'assistant', blocks: [{ type: 'tool_use', id, name, input: {} }] });
const result = (id: string): CanonicalMessage => ({ role: 'user', blocks: [{ type: 'tool_result', toolUseId: id, content: 'ok', isError: false }] });
const note = (t: string): CanonicalMessage => ({ role: 'user', blocks: [{ type: 'text', text: t }] });
const list = (messages: CanonicalMessage[]): SessionMessage[] => messages.map((message, i) => ({ seq: i + 1, message, tokens: 10 }));

describe('toolNameLookup (the tool a result answers, as toolPairLinks pairs them)', () => {
  it('names the latest call with the id before the result, also when an id is used again later (SWE-agent replays)', () => {
    const messages = list([call('a', 'bash'), result('a'), call('a', 'open'), result('a')]);
    const nameOf = toolNameLookup(messages);
    expect(nameOf(1, 'a')).toBe('bash');
    expect(nameOf(3, 'a')).toBe('open');
  });

  it('finds a call far before its result, and none where no call came before', () => {
    const far = list([call('x', 'grep'), ...Array.from({ length: 40 }, (_, i) => note(`n${i}`)), result('x'), result('y'), call('y', 'late')]);
    const nameOf = toolNameLookup(far);
    expect(nameOf(41, 'x')).toBe('grep');
    expect(nameOf(42, 'y')).toBeUndefined();
    // Reused far apart: each result gets the call before it, from the index too.
    const reused = list([call('r', 'first'), ...Array.from({ length: 30 }, (_, i) => note(`n${i}`)), call('r', 'second'), ...Array.from({ length: 30 }, (_, i) => note(`m${i}`)), result('r')]);
    expect(toolNameLookup(reused)(reused.length - 1, 'r')).toBe('second');
  });
});
