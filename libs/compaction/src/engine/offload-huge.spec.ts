import { CanonicalMessage } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { offloadLargeResult, offloadToolResults, toolNamesOf } from './offload';
import { Protection } from './protection';
import { CountMessage, SessionMessage } from './types';

/** 4 characters a token, like offload.spec's counter, but it refuses to count a megabyte: the stage must not need that. */
const countedChars: number[] = [];
const count: CountMessage = (m) => {
  const chars = countableParts(m).texts.reduce((n, t) => n + t.length, 0);
  countedChars.push(chars);
  if (chars > 1 << 20) throw new Error(`counted a ${chars}-char message`);
  return 3 + Math.ceil(chars / 4);
};

/** A 3 MB tool result without whitespace (the 30 MB case of issue #15, smaller) in a message of its own, stored with its count. */
function hugeResultSession(): SessionMessage[] {
  const blob = 'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo+/'.repeat(90_000);
  const messages: CanonicalMessage[] = [
    { role: 'user', blocks: [{ type: 'text', text: 'Dump the blob.' }] },
    { role: 'assistant', blocks: [{ type: 'tool_use', id: 'call_blob', name: 'read_file', input: { path: 'blob.b64' } }] },
    { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'call_blob', content: blob, isError: false }] },
  ];
  return messages.map((message, i) => ({ seq: i + 1, message, tokens: 3 + Math.ceil(countableParts(message).texts.reduce((n, t) => n + t.length, 0) / 4) }));
}

describe('offloading a huge result', () => {
  beforeEach(() => (countedChars.length = 0));

  it('at ingest: decides and offloads a result far above the limit without counting it; the artifact keeps the stored count', () => {
    const s = hugeResultSession();
    const out = offloadLargeResult(s[2], { offloadAboveTokens: 4_000, protection: { exemptToolNames: [] } }, count, toolNamesOf(s));
    expect(out?.stage).toBe('offloaded');
    expect(out?.artifacts).toHaveLength(1);
    expect(out?.artifacts[0].tokens).toBe(s[2].tokens);
    expect(out!.message.tokens).toBeLessThan(1_000);
    expect(Math.max(...countedChars)).toBeLessThan(10_000); // only the reference was counted
  });

  it('in a run: the same, and a result just above the limit is still counted exactly', () => {
    const s = hugeResultSession();
    const protection: Protection = { whole: new Set(), userText: new Set(), exemptToolUseIds: new Set() };
    const out = offloadToolResults(s, protection, { minTokens: 500 }, count);
    expect(out.offloaded).toEqual([{ seq: 3, artifactIds: [out.artifacts[0].id] }]);
    expect(out.artifacts[0].tokens).toBe(s[2].tokens);
    // 600 tokens of text (2,400 chars, under 256 × 501 chars): counted, and offloaded as before.
    const small = s.map((m, i) => (i === 2 ? { ...m, message: { ...m.message, blocks: [{ type: 'tool_result' as const, toolUseId: 'call_blob', content: 'abcd'.repeat(600), isError: false }] } } : m));
    countedChars.length = 0;
    expect(offloadToolResults(small, protection, { minTokens: 500 }, count).offloaded).toHaveLength(1);
    expect(countedChars).toContain(2_400);
  });
});
