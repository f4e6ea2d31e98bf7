import { LedgerEntry } from '../ledger/ledger';
import { CONSTRAINTS_LABEL } from '../ledger/render';
import { repairWithLedger } from './summarize';

const words = (t: string) => t.split(/\s+/).filter(Boolean).length;
const entry = (kind: LedgerEntry['kind'], value: string, more: Partial<LedgerEntry> = {}): LedgerEntry => ({
  kind,
  key: value.toLowerCase(),
  value,
  firstSeq: 3,
  lastSeq: 3,
  role: 'user',
  count: 1,
  mentionedAgain: false,
  weight: 1,
  ...more,
});

describe('repairWithLedger (a checkpoint Facts section)', () => {
  // The constraint of testdata's aider-202408170619-0748, which its summary held in prose; the read-time fallback cut the prose and lost it.
  const constraint = entry('constraint', "don't use TAGs_CACHE, use self.map_cache");
  const path = entry('path', 'aider/repomap.py', { state: 'edited', role: 'assistant' });

  it("lists the span's entries the summary lacks, not the ones it holds", () => {
    const out = repairWithLedger('Edited aider/repomap.py to cache the map.', { entries: [path, entry('url', 'https://aider.chat/docs/repomap.html', { role: 'tool' })], heldElsewhere: '', maxTokens: 200 }, words);
    expect(out.facts).toContain('https://aider.chat/docs/repomap.html');
    expect(out.facts).not.toContain('aider/repomap.py');
    expect(out.account.kept.map((e) => e.value)).toEqual(['aider/repomap.py']);
  });

  it("lists a user constraint even when the summary's prose holds it: the fallback cuts prose first and keeps only the constraints of a dropped checkpoint (Guarantee 3)", () => {
    const out = repairWithLedger("The user said: don't use TAGs_CACHE, use self.map_cache. Edited aider/repomap.py.", { entries: [constraint, path], heldElsewhere: '', maxTokens: 200 }, words);
    expect(out.facts).toContain(`- ${CONSTRAINTS_LABEL}:\n  - "don't use TAGs_CACHE, use self.map_cache"`);
    expect(out.facts).not.toContain('aider/repomap.py');
  });

  it('does not repeat a constraint the rest of the context already holds', () => {
    const out = repairWithLedger('Edited aider/repomap.py.', { entries: [constraint, path], heldElsewhere: `"don't use TAGs_CACHE, use self.map_cache"`, maxTokens: 200 }, words);
    expect(out.facts ?? '').not.toContain('TAGs_CACHE');
  });
});
