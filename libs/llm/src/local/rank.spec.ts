/**
 * Ranking's redundancy discount, on sentences of the real traces in testdata/ (OpenHands
 * ponylang__ponyc-4593 and resolver pr-viewer-1, Claude Code fe5e1c67): the frame an agent repeats with other names in
 * its slots weighs less the more often it recurs; what is said once keeps its score.
 */
import { discountBoilerplate, sentenceFrame } from './rank';
import type { RawUnit, Unit } from './unit';

const unit = (text: string, message: number, over: Partial<Unit> = {}): Unit => ({
  text,
  pos: message,
  source: 'assistant',
  form: 'prose',
  category: 'note',
  score: 4,
  facts: [],
  norm: text.toLowerCase(),
  message,
  ...over,
});
const raw = (u: Unit): RawUnit => ({ text: u.text, pos: u.pos, message: u.message, source: u.source, form: u.form, weight: 1, bonus: 0 });

describe('redundancy discount', () => {
  it('one frame for the same sentence with other names in its slots', () => {
    expect(sentenceFrame('It seems that the `old_str` I provided still doesn\'t match the exact code in the file.')).toBe(
      sentenceFrame('It seems that the `new_str` I provided still doesn\'t match the exact code in the file.'),
    );
    expect(sentenceFrame('[File: /workspace/src/App.css (79 lines total after edit)]')).toBe(sentenceFrame('[File: /workspace/src/PullRequestViewer.tsx (113 lines total after edit)]'));
    expect(sentenceFrame('I apologize for the confusion.')).not.toBe(sentenceFrame('I apologize for the continued errors.'));
  });

  it('a frame said three times or more weighs less the more it recurs; a sentence said once, a user constraint and a value keep their score', () => {
    const repeated = [0, 3, 5, 9].map((m) => unit("It seems that the `old_str` I provided still doesn't match the exact code in the file.", m));
    const once = unit('The parser now keeps track of the sub-command it already parsed instead of returning early.', 6);
    const constraint = unit("Please DO NOT re-run the same failed edit command.", 7, { source: 'user', category: 'constraint' });
    const constraints = [7, 8, 10].map((m) => ({ ...constraint, message: m, pos: m }));
    const value = unit('Set `--file` to f3.', 11, { facts: [{ key: '--file', value: 'f3' }] as Unit['facts'] });
    const all = [...repeated, once, ...constraints, value];
    const out = discountBoilerplate(all, all.map(raw));
    const score = (u: Unit) => out[all.indexOf(u)].score;
    expect(score(repeated[0])).toBeLessThan(4 / 2);
    expect(score(once)).toBe(4);
    expect(score(constraints[0])).toBe(4);
    expect(score(value)).toBe(4);
    // Twice is not yet a pattern.
    const twice = [0, 1].map((m) => unit('I apologize for the continued errors in the edit.', m));
    expect(discountBoilerplate(twice, twice.map(raw)).map((u) => u.score)).toEqual([4, 4]);
  });

  it('a sentence said again with other plain words in one place counts as the same narration (Claude Code fe5e1c67)', () => {
    // Five frames, one narration: most of a sentence's word trigrams recur in the others.
    const narration = [
      'Now let me update the todo status and create a Filter component for the todo-app:',
      'Now let me update the todo status and integrate everything in the page.tsx:',
      'Now let me update the todo status and test the functionality:',
      'Now let me check the TypeScript compilation again:',
      'Now let me check the available components:',
    ].map((t, i) => unit(t, i * 4));
    expect(new Set(narration.map((u) => sentenceFrame(u.text))).size).toBe(5);
    const said = unit('The filter state now lives in the URL so a reload keeps the selected tab.', 23);
    const all = [...narration, said];
    const out = discountBoilerplate(all, all.map(raw));
    const score = (i: number) => out[all.indexOf(narration[i])].score;
    expect(score(1)).toBeLessThan(4);
    expect(score(2)).toBeLessThan(4);
    // More than half of this one's trigrams are its own ("create a Filter component for the todo-app"): it keeps its score.
    expect(score(0)).toBe(4);
    expect(out[all.indexOf(said)].score).toBe(4);
  });
});
