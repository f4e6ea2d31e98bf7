import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { countTextSync } from '@compactor/tokens';
import { CanonicalMessage } from '../messages/canonical';
import { parseOpenAIMessages } from '../messages/openai';
import { FactsLedger } from '../ledger/ledger';
import { taskStatement } from './goal-markers';
import { TASK_KEYS_SHARE, taskStatementWithKeys } from './task-statement';

const count = (t: string) => countTextSync(t, 'o200k_base');
const user = (text: string): CanonicalMessage => ({ role: 'user', blocks: [{ type: 'text', text }] });
const say = (text: string): CanonicalMessage => ({ role: 'assistant', blocks: [{ type: 'text', text }] });
const seqd = (messages: CanonicalMessage[]) => messages.map((message, i) => ({ seq: i + 1, message }));

describe('taskStatementWithKeys (the goal block task section keeps the ledger keys of what it cuts)', () => {
  it('a statement that fits is the statement, with no keys line', () => {
    const msgs = seqd([user('Fix the crash in `parse_config` when HOME is unset.'), say('On it.')]);
    const ledger = FactsLedger.of(msgs).entries();
    expect(taskStatementWithKeys(msgs, 200, count, ledger)).toEqual(taskStatement(msgs, 200, count));
  });

  it('a cut statement gives up to a third of its allowance to the keys first seen in the part it cut, highest weight first', () => {
    const prose = Array.from({ length: 30 }, (_, i) => `Line ${i} of the report says the export is slow for large accounts.`).join('\n');
    const msgs = seqd([user(`${prose}\nReproduce with \`export_accounts(limit=500)\` against https://staging.example.com/export and see \`AccountExporter.flush\`.`), say('Looking.')]);
    const ledger = FactsLedger.of(msgs).entries();
    const out = taskStatementWithKeys(msgs, 90, count, ledger);
    const lines = out?.text.split('\n') ?? [];
    expect(lines.at(-1)).toMatch(/^Keys in the rest of it: /);
    expect(lines.at(-1)).toContain('https://staging.example.com/export');
    expect(out?.text.startsWith(taskStatement(msgs, Math.floor(90 * (1 - TASK_KEYS_SHARE)), count)?.text ?? '?')).toBe(true);
    expect(count(out?.text ?? '')).toBeLessThanOrEqual(90);
    // Without keys in the cut part, the statement keeps its whole allowance.
    const plain = seqd([user(prose), say('Looking.')]);
    expect(taskStatementWithKeys(plain, 90, count, FactsLedger.of(plain).entries())).toEqual(taskStatement(plain, 90, count));
  });

  it('pydicom-1458__gpt4 (SWE-agent): the issue text is cut after its opening lines, and the code names below them stay', () => {
    const file = join(__dirname, '../../../../testdata/swe-agent-trajectories/pydicom-1458__gpt4.traj');
    const parsed = parseOpenAIMessages((JSON.parse(readFileSync(file, 'utf8')) as { history: unknown[] }).history, 'history');
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const msgs = seqd(parsed.value);
    const ledger = FactsLedger.of(msgs).entries();
    for (const allowance of [174, 300]) {
      const cut = taskStatement(msgs, allowance, count);
      const out = taskStatementWithKeys(msgs, allowance, count, ledger);
      expect(out?.seq).toBe(cut?.seq);
      const keys = out?.text.split('\n').at(-1) ?? '';
      expect(keys).toMatch(/^Keys in the rest of it: \S/);
      // `pixel_array` says nothing that `Dataset.pixel_array` does not (rankedKeys).
      const listed = keys.slice('Keys in the rest of it: '.length).split('; ');
      if (listed.includes('Dataset.pixel_array')) expect(listed).not.toContain('pixel_array');
      expect(count(out?.text ?? '')).toBeLessThanOrEqual(allowance);
    }
    // With the whole allowance (300 tokens): the code names of the example, which the statement cut to 300
    // tokens without keys lacks.
    const out = taskStatementWithKeys(msgs, 300, count, ledger)?.text ?? '';
    const plain = taskStatement(msgs, 300, count)?.text ?? '';
    for (const key of ['ds.BitsAllocated', 'ds.SamplesPerPixel', 'ds.Rows', 'ds.PhotometricInterpretation']) {
      expect(plain).not.toContain(key);
      expect(out).toContain(key);
    }
  });
});
