/**
 * The facts ledger on real agent sessions (testdata/, copied from the team's shared data; see
 * its README). Every expectation below was read off the trace by hand; none comes from a
 * generated session.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CanonicalMessage } from '../messages/canonical';
import { parseAnthropicMessages } from '../messages/anthropic';
import { parseOpenAIMessages } from '../messages/openai';
import { FactsLedger, LedgerEntry, ledgerOfText } from './ledger';
import { checkLedger, entryText, fitEntries, isPinned, mergeFactsSections, rankEntries, renderFacts } from './render';
import { placeholderKeys, placeholderKeysOf, rankedKeys } from './placeholder';
import { constraintSentences, exitStatusOf, hashesIn, isTransitiveRequirement, settingsIn, testResultsIn, ticketIdsIn, urlsIn } from './recognize';
import { LEDGER_SCAN_CHARS, scanWindow } from './rules';
import { errorLines } from './errors';

const TESTDATA = join(__dirname, '../../../../testdata');

function sweAgent(file: string): { seq: number; message: CanonicalMessage }[] {
  const raw = (JSON.parse(readFileSync(join(TESTDATA, 'swe-agent-trajectories', file), 'utf8')) as { history: Record<string, unknown>[] }).history;
  const messages = raw.map(({ tool_call_ids, agent: _a, message_type: _t, thought: _th, action: _ac, cache_control: _c, ...rest }) =>
    Array.isArray(tool_call_ids) ? { ...rest, tool_call_id: tool_call_ids[0] } : rest,
  );
  const parsed = parseOpenAIMessages(messages, 'history');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value.map((message, i) => ({ seq: i + 1, message }));
}

/** A Claude Code session's main chain (sidechains are Task subagents), one message per API message. */
function claudeCode(file: string): { seq: number; message: CanonicalMessage }[] {
  const out: { role: string; content: unknown[] }[] = [];
  for (const line of readFileSync(join(TESTDATA, 'claude-code-viewer-demo', file), 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const l = JSON.parse(line) as { type: string; isSidechain?: boolean; message?: { role: string; content: unknown } };
    if (l.isSidechain || (l.type !== 'user' && l.type !== 'assistant') || !l.message) continue;
    const content = typeof l.message.content === 'string' ? [{ type: 'text', text: l.message.content }] : (l.message.content as unknown[]);
    const last = out[out.length - 1];
    if (last && last.role === l.message.role) last.content.push(...content);
    else out.push({ role: l.message.role, content: [...content] });
  }
  const parsed = parseAnthropicMessages(out, 'messages');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value.map((message, i) => ({ seq: i + 1, message }));
}

const find = (entries: LedgerEntry[], kind: LedgerEntry['kind'], value: string) => entries.find((e) => e.kind === kind && e.value === value);

describe('facts ledger on SWE-agent trajectories', () => {
  const marshmallow = FactsLedger.of(sweAgent('marshmallow-1867__function_calling_replace_from_source.traj')).entries();

  it('records the files the agent acted on with their last operation', () => {
    // The agent creates reproduce.py, runs it, and removes it at the end (`rm reproduce.py`).
    expect(find(marshmallow, 'path', 'reproduce.py')?.state).toBe('deleted');
    // fields.py is opened and then edited with the editor tool.
    const fields = marshmallow.filter((e) => e.kind === 'path' && e.value.endsWith('src/marshmallow/fields.py'));
    expect(fields.map((e) => e.state)).toContain('edited');
  });

  it('records commands with how often they ran, and the pins pip printed', () => {
    const run = find(marshmallow, 'command', 'python reproduce.py');
    expect(run?.count).toBeGreaterThanOrEqual(2);
    expect(find(marshmallow, 'version', 'flake8==4.0.1')).toBeDefined();
  });

  it("keeps setup.py's pins, not the ranges pip printed for dependencies of dependencies", () => {
    // setup.py's docs extras, read with the editor.
    expect(find(marshmallow, 'version', 'sphinx==4.2.0')).toBeDefined();
    // `Requirement already satisfied: virtualenv>=20.10.0 in … (from pre-commit~=2.4->marshmallow==3.13.0)`: pre-commit's requirement, not the project's.
    expect(find(marshmallow, 'version', 'virtualenv>=20.10.0')).toBeUndefined();
    // The direct requirement on a line whose `(from …)` names the project alone stays.
    expect(find(marshmallow, 'version', 'pre-commit~=2.4')).toBeDefined();
    expect(isTransitiveRequirement('Collecting idna<4,>=2.5 (from requests==2.31.0->app==1.0)')).toBe(true);
    expect(isTransitiveRequirement('Requirement already satisfied: mypy==0.910 in /x/site-packages (from marshmallow==3.13.0) (0.910)')).toBe(false);
    expect(isTransitiveRequirement('a -> b (from x)')).toBe(false);
  });

  it('keeps the user instructions that bind (must, always, only) verbatim, and pins them', () => {
    const constraints = marshmallow.filter((e) => e.kind === 'constraint' && isPinned(e)).map((e) => e.value);
    expect(constraints).toContain('Always start by trying to replicate the bug that the issues discusses.');
    expect(constraints).toContain('Remember, YOU SHOULD ALWAYS INCLUDE EXACTLY ONE TOOL CALL/FUNCTION CALL PER RESPONSE.');
  });

  it('names the exception of an observation sent as user text (commands in text)', () => {
    const pydicom = FactsLedger.of(sweAgent('pydicom-1458__gpt4.traj')).entries();
    const errors = pydicom.filter((e) => e.kind === 'error').map((e) => e.value);
    expect(errors.some((e) => e.includes('AttributeError'))).toBe(true);
    // The instructions' own words about failures ("…doesn't work…", "cannot") are not errors: only a pasted report's named ones are.
    expect(errors.filter((e) => e.includes('YOU CAN ONLY') || e.includes("doesn't work") || e.includes('doensn'))).toEqual([]);
  });

  it('is incremental: adding the messages in two steps gives the same ledger as one pass', () => {
    const messages = sweAgent('marshmallow-1867__function_calling.traj');
    const whole = FactsLedger.of(messages).state();
    const half = FactsLedger.of(messages.slice(0, 11));
    const resumed = FactsLedger.from(JSON.parse(JSON.stringify(half.state()))).addAll(messages).state();
    expect(resumed.entries.map((e) => [e.kind, e.key, e.value, e.count]).sort()).toEqual(whole.entries.map((e) => [e.kind, e.key, e.value, e.count]).sort());
    expect(resumed.throughSeq).toBe(whole.throughSeq);
  });

  it('is incremental for an agent that acts through text: a command\'s output read after a resume is still its output, at every cut', () => {
    // pydicom-1458 (gpt4): the agent writes its commands in its text; the next user message is their output.
    const messages = sweAgent('pydicom-1458__gpt4.traj');
    const whole = JSON.stringify(FactsLedger.of(messages).state());
    for (let cut = 1; cut < messages.length; cut += 1) {
      const resumed = FactsLedger.from(JSON.parse(JSON.stringify(FactsLedger.of(messages.slice(0, cut)).state()))).addAll(messages);
      expect([cut, JSON.stringify(resumed.state())]).toEqual([cut, whole]);
    }
  });

  it("reads the next user message as a command's output only when the agent's message ends with the command (SWE-agent), not when it shows one and goes on (aider 1128)", () => {
    // aider-dev-history/chat-history.md (2024-08-22 06:29): the assistant shows how to run the script, then explains; the user answers.
    const advice = "Now you can run the script directly like this:\n\n```bash\n./testsr.py your_markdown_file.md\n```\n\nThis assumes you're in the same directory as the script.";
    const reply = { seq: 2, message: { role: 'user' as const, blocks: [{ type: 'text' as const, text: 'use indent=4 on all json.dump' }] } };
    const said = FactsLedger.of([{ seq: 1, message: { role: 'assistant', blocks: [{ type: 'text', text: advice }] } }, reply]).entries();
    const fromReply = (entries: LedgerEntry[]) => entries.filter((e) => e.firstSeq === 2).map((e) => [e.value, e.role]);
    expect(fromReply(said).length).toBeGreaterThan(0);
    expect(fromReply(said).every(([, role]) => role === 'user')).toBe(true);
    // The same command at the end of the message is run, and what follows is read as its output.
    const ran = FactsLedger.of([{ seq: 1, message: { role: 'assistant', blocks: [{ type: 'text', text: 'Let me run it.\n```\n./testsr.py your_markdown_file.md\n```' }] } }, reply]).entries();
    expect(fromReply(ran).every(([, role]) => role === 'tool')).toBe(true);
    // Every SWE-agent turn ends with its command: pydicom-1458's outputs stay outputs.
    const messages = sweAgent('pydicom-1458__gpt4.traj');
    const ledger = new FactsLedger();
    let outputs = 0;
    for (const m of messages) {
      if (m.message.role === 'user' && ledger.state().awaitingOutput) outputs += 1;
      ledger.addAll([m]);
    }
    expect(outputs).toBe(11);
  });

  it('is pruned to a size by weight, never losing the user constraints', () => {
    const ledger = FactsLedger.of(sweAgent('marshmallow-1867__function_calling_replace_from_source.traj'));
    const constraints = ledger.entries().filter(isPinned).length;
    ledger.prune(constraints + 5);
    expect(ledger.size).toBe(constraints + 5);
    expect(ledger.entries().filter(isPinned)).toHaveLength(constraints);
    // What stays besides them is what the agent or the user named again, and weighs most.
    const rest = ledger.entries().filter((e) => !isPinned(e));
    expect(rest.every((e) => e.mentionedAgain)).toBe(true);
    expect(rest.map((e) => e.value)).toContain('TimeDelta');
  });
});

describe('facts ledger on a Claude Code session', () => {
  const session = claudeCode('5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl');
  const entries = FactsLedger.of(session).entries();

  it('reads the todo list (TodoWrite) as open tasks, and the dev server URLs of the Bash outputs', () => {
    expect(entries.some((e) => e.kind === 'task')).toBe(true);
    expect(find(entries, 'url', 'http://localhost:3000')).toBeDefined();
  });

  it('a Facts section within its share keeps the highest-weighted entries, and the check finds them', () => {
    const ranked = rankEntries(entries);
    const fit = fitEntries(ranked, 300, (t) => Math.ceil(t.length / 4));
    const section = renderFacts(fit.kept);
    expect(Math.ceil(section.length / 4)).toBeLessThanOrEqual(300 + 50);
    expect(fit.kept.length + fit.dropped.length).toBe(ranked.length);
    expect(checkLedger(fit.kept, section).share).toBe(1);
    // What did not fit is not in it.
    expect(fit.dropped.every((e) => !fit.kept.includes(e))).toBe(true);
  });
});

describe('recognizers (general shapes of shell output, code and language)', () => {
  it('settings and pins keep their latest value, the older ones as `was`', () => {
    const ledger = FactsLedger.of([
      { seq: 1, message: { role: 'user', blocks: [{ type: 'text', text: 'Use MAX_RETRIES=3 for now.' }] } },
      { seq: 2, message: { role: 'assistant', blocks: [{ type: 'text', text: 'Installed left-pad@1.2.0.' }] } },
      { seq: 3, message: { role: 'user', blocks: [{ type: 'text', text: 'Actually make it MAX_RETRIES=5.' }] } },
      { seq: 4, message: { role: 'assistant', blocks: [{ type: 'text', text: 'Upgraded to left-pad@1.3.0.' }] } },
    ]);
    const retries = ledger.entries().find((e) => e.key === 'max_retries');
    expect(retries).toMatchObject({ kind: 'setting', value: 'MAX_RETRIES=5', was: ['MAX_RETRIES=3'], mentionedAgain: true });
    expect(entryText(retries as LedgerEntry)).toBe('MAX_RETRIES=5 (was MAX_RETRIES=3)');
    expect(ledger.entries().find((e) => e.key === 'left-pad')).toMatchObject({ kind: 'version', value: 'left-pad@1.3.0', was: ['left-pad@1.2.0'] });
  });

  it('test results as pytest, Go, Jest, unittest and cargo print them', () => {
    expect(testResultsIn('FAILED tests/test_api.py::test_login - AssertionError')).toEqual([{ name: 'tests/test_api.py::test_login', result: 'failed' }]);
    expect(testResultsIn('tests/test_api.py::test_logout PASSED')).toEqual([{ name: 'tests/test_api.py::test_logout', result: 'passed' }]);
    expect(testResultsIn('--- FAIL: TestParse (0.00s)')).toEqual([{ name: 'TestParse', result: 'failed' }]);
    expect(testResultsIn('FAIL src/app.spec.ts')).toEqual([{ name: 'src/app.spec.ts', result: 'failed' }]);
    expect(testResultsIn('test_round (tests.test_fields.TimeDeltaTest) ... ok')).toEqual([{ name: 'tests.test_fields.TimeDeltaTest.test_round', result: 'passed' }]);
    expect(testResultsIn('test parser::tests::empty ... FAILED')).toEqual([{ name: 'parser::tests::empty', result: 'failed' }]);
  });

  it('URLs, hashes, ticket ids; not version-like words', () => {
    expect(urlsIn('see https://github.com/org/repo/pull/12.')).toEqual(['https://github.com/org/repo/pull/12']);
    expect(hashesIn('HEAD is now at 8da0b9b fix')).toEqual(['8da0b9b']);
    expect(hashesIn('took 1234567 ms')).toEqual([]);
    expect(ticketIdsIn('Fixes PROJ-1234 and #5678; encoded as UTF-8')).toEqual(['PROJ-1234', '#5678']);
  });

  it('settings outside the user and agent words only in configuration shape', () => {
    expect(settingsIn('value_0 = compute(0)', false)).toEqual([]);
    expect(settingsIn('export DATABASE_POOL=20', false)).toEqual([{ name: 'DATABASE_POOL', separator: '=', value: '20', version: false }]);
    expect(settingsIn('--max-old-space-size=4096', false)).toEqual([{ name: '--max-old-space-size', separator: '=', value: '4096', version: false }]);
    expect(settingsIn('  "react": "^18.2.0",', false)).toEqual([{ name: 'react', separator: ': ', value: '^18.2.0', version: true }]);
  });

  it('a sentence binds when it has a deontic or negating word; other requests are softer', () => {
    expect(constraintSentences("Don't touch the migrations. Could you look at the logs?")).toEqual([{ text: "Don't touch the migrations.", strong: true }]);
    expect(constraintSentences('Please keep the public API as it is.')).toEqual([{ text: 'Please keep the public API as it is.', strong: false }]);
  });

  it('"must have" with a participle infers and "is no longer" describes: neither binds (the demonstration in pydicom-1458__gpt4.traj)', () => {
    const pydicom = FactsLedger.of(sweAgent('pydicom-1458__gpt4.traj')).entries().filter((e) => e.kind === 'constraint').map((e) => e.value);
    expect(pydicom).not.toContain("rm doesn't have any output when it deletes successfully, so that must have worked.");
    expect(pydicom).not.toContain("Let's remove the reproduce.py file since it is no longer needed.");
    // The binding uses of the same words still bind.
    expect(constraintSentences('You must have a test for every fix.')).toEqual([{ text: 'You must have a test for every fix.', strong: true }]);
    expect(constraintSentences('We no longer support Python 2.')).toEqual([{ text: 'We no longer support Python 2.', strong: true }]);
    expect(pydicom).toContain('Always start by trying to replicate the bug that the issues discusses.');
  });

  it("the user's binding constraints have the first group to themselves; softer requests have their own, which gives way (pydicom-1458__gpt4.traj)", () => {
    const constraints = FactsLedger.of(sweAgent('pydicom-1458__gpt4.traj'))
      .entries()
      .filter((e) => e.kind === 'constraint');
    const facts = renderFacts(constraints).split('\n');
    const requests = facts.indexOf('- User requests (verbatim):');
    expect(facts[0]).toBe('- User constraints (verbatim):');
    expect(requests).toBeGreaterThan(1);
    const pinned = facts.slice(1, requests);
    expect(pinned).toContain('  - "Always start by trying to replicate the bug that the issues discusses."');
    expect(pinned).not.toContain('  - "Edit all the files you need to and run any checks or tests that you want."');
    expect(facts.slice(requests)).toContain('  - "Edit all the files you need to and run any checks or tests that you want."');
  });

  it('error lines of OpenHands outputs (ponylang__ponyc-4593): a bare "ERROR:" takes its message; a file listing is no errno', () => {
    expect(errorLines('ERROR:\nParameter `old_str` is required for command: str_replace. ')).toEqual(['ERROR: Parameter `old_str` is required for command: str_replace.']);
    const ls =
      'BUILD.md  CHANGELOG.md  CMakeLists.txt  CODE_OF_CONDUCT.md  CONTRIBUTING.md  EDITORS.md  INSTALL.md  INSTALL_DOCKER.md  LICENSE  Makefile  README.md  RELEASE_PROCESS.md  STYLE_GUIDE.md  SUPPORT.md  SYSTEMATIC_TESTING.md  VERSION  benchmark  examples  lib  make.ps1  minimal-cases  packages  pony.cloc  pony.g  src  test';
    expect(errorLines(ls)).toEqual([]);
    // An errno name still names a failure.
    expect(errorLines('Error: connect ECONNREFUSED 127.0.0.1:5432')).toEqual(['Error: connect ECONNREFUSED 127.0.0.1:5432']);
    expect(errorLines('cp: cannot stat x: ENOENT')).toHaveLength(1);
  });

  it("a user's sentence that names errors is still the user's own words: its constraint is pinned (claude-code 1af7fc5e, SWE-agent)", () => {
    const claude = FactsLedger.of(claudeCode('1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl'))
      .entries()
      .filter((e) => e.kind === 'constraint' && isPinned(e))
      .map((e) => e.value);
    expect(claude.some((c) => c.includes('do not repeat yourself and do not include obvious instructions like "Provide helpful error messages to users"'))).toBe(true);
    const pydicom = FactsLedger.of(sweAgent('pydicom-1458__gpt4.traj'))
      .entries()
      .filter((e) => e.kind === 'constraint' && isPinned(e))
      .map((e) => e.value);
    expect(pydicom).toContain('DO NOT re-run the same failed edit command.');
    // A pasted report in a user message is not: its named exception keeps it an error line only.
    const pasted = FactsLedger.of([{ seq: 1, message: { role: 'user', blocks: [{ type: 'text', text: "I get this:\nValueError: Reference at 'refs/heads/main' does not exist, cannot continue" }] } }]).entries();
    expect(pasted.filter((e) => e.kind === 'constraint')).toEqual([]);
  });

  it("a user's instruction that names an exception in passing is no error report; a pasted report still is (aider 0343)", () => {
    // Three of the user's lines in aider-dev-history/chat-history.md (2024-08-09 19:32), verbatim, and the error they answered.
    const said = ['no, in cmd_diff catch `ValueError` when you set `current_head`', 'again, catch ValueError on .head', "make a Repo.get_head() method that returns repo.head.commit.hexsha or None if there's a ValueError"];
    const entries = FactsLedger.of(said.map((text, i) => ({ seq: i + 1, message: { role: 'user' as const, blocks: [{ type: 'text' as const, text }] } }))).entries();
    expect(entries.filter((e) => e.kind === 'error')).toEqual([]);
    const reports = ["ValueError: Reference at 'refs/heads/main' does not exist", 'E       AttributeError: <module \'aider.main\'> does not have the attribute \'RepoMap\'', '- E999 IndentationError: unexpected indent', 'I get this: TypeError: confirm() got an unexpected keyword argument \'default\''];
    for (const text of reports) {
      const found = FactsLedger.of([{ seq: 1, message: { role: 'user', blocks: [{ type: 'text', text }] } }]).entries();
      expect(found.filter((e) => e.kind === 'error').map((e) => e.value)).toEqual([text.replace(/\s+/g, ' ')]);
    }
  });

  it("a rule of underscores is no identifier; a dunder name is (pytest's section rules pasted in aider 0647)", () => {
    // aider-dev-history/chat-history.md: pytest's failure header, pasted by the user with the /run output, verbatim.
    const rule = readFileSync(join(TESTDATA, 'aider-dev-history', 'chat-history.md'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('_______________________ TestMain.test_map_tokens_option'));
    expect(rule).toBeDefined();
    const entries = ledgerOfText(`${rule}\n____________________\nThe fix is in Coder.__init__ and the test's setUp.`, 'user');
    expect(entries.filter((e) => /^_+$/.test(e.value))).toEqual([]);
    expect(find(entries, 'identifier', 'TestMain.test_map_tokens_option')).toBeDefined();
    expect(entries.some((e) => e.value.includes('__init__'))).toBe(true);
  });

  it("Claude Code's Read listing is code: a line of the file that says `error` is no failure (claude-code fe5e1c67)", () => {
    const errors = FactsLedger.of(claudeCode('fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl'))
      .entries()
      .filter((e) => e.kind === 'error')
      .map((e) => e.value);
    expect(errors.filter((v) => /^\d+→/.test(v))).toEqual([]);
    expect(errorLines('    92→- Error handling for storage operations\n    93→- Undo support')).toEqual([]);
    expect(errorLines('    92→raise ValueError(x)\nValueError: bad value')).toEqual(['ValueError: bad value']);
  });

  it('merged Facts sections: each group once, the user constraints first, items without repeats', () => {
    const a = ['- User constraints (verbatim):', '  - "Never edit the migrations."', '- Files: src/a.ts; src/b.ts'].join('\n');
    const b = ['- Errors:', '  - E999 SyntaxError: unmatched \')\'', '- User constraints (verbatim):', '  - "Keep the CLI flags as they are."', '- Files: src/b.ts; src/c.ts'].join('\n');
    expect(mergeFactsSections([a, undefined, b])).toBe(
      [
        '- User constraints (verbatim):',
        '  - "Never edit the migrations."',
        '  - "Keep the CLI flags as they are."',
        '- Errors:',
        '  - E999 SyntaxError: unmatched \')\'',
        '- Files: src/a.ts; src/b.ts; src/c.ts',
      ].join('\n'),
    );
    expect(mergeFactsSections([undefined, ''])).toBeUndefined();
  });

  it('exit status from the output, or failed for an error result', () => {
    expect(exitStatusOf('...\nProcess exited with code 2', false)).toBe('exit 2');
    expect(exitStatusOf('boom', true)).toBe('failed');
    expect(exitStatusOf('ok', false)).toBeUndefined();
  });

  it('a masked output keeps its keys: a listing of many files lists none of them', () => {
    expect(placeholderKeys('Collecting flake8==4.0.1\nSuccessfully installed flake8-4.0.1\nsee https://pip.pypa.io/warnings/venv')).toContain('flake8==4.0.1');
    const listing = Array.from({ length: 40 }, (_, i) => `src/module_${i}.py`).join('\n');
    expect(placeholderKeys(listing)).toBeUndefined();
    // Among many paths, those the work created, edited or deleted are still keys.
    const path = (value: string, state: string): LedgerEntry => ({ kind: 'path', key: value, value, state, firstSeq: 1, lastSeq: 1, role: 'assistant', count: 1, mentionedAgain: false, weight: 1 });
    const keys = placeholderKeysOf([...Array.from({ length: 12 }, (_, i) => path(`src/read_${i}.py`, 'read')), path('docs/GUIDE.md', 'created'), path('src/app.py', 'edited')]) ?? '';
    expect(keys).toContain('docs/GUIDE.md (created)');
    expect(keys).toContain('src/app.py (edited)');
    expect(keys).not.toContain('src/read_');
  });

  it('lists a name once: not beside a dotted name that ends with it (pydicom-1458__gpt4: `Dataset.pixel_array`)', () => {
    const entries = FactsLedger.of(sweAgent('pydicom-1458__gpt4.traj')).entries();
    expect(entries.map((e) => e.value)).toEqual(expect.arrayContaining(['pixel_array', 'Dataset.pixel_array']));
    const keys = rankedKeys(entries);
    expect(keys).toContain('Dataset.pixel_array');
    expect(keys).not.toContain('pixel_array');
    // A name no dotted one ends with stays.
    expect(keys).toContain('FileMetaDataset');
  });

  it('ranks more entries than a call can take arguments (a 30 MB log holds hundreds of thousands): no RangeError', () => {
    const entries = Array.from(
      { length: 300_000 },
      (_, i): LedgerEntry => ({ kind: 'identifier', key: `id-${i}`, value: `id-${i}`, firstSeq: 1, lastSeq: 1 + (i % 7), role: 'tool', count: 2, mentionedAgain: true, weight: 1 }),
    );
    const ranked = rankEntries(entries);
    expect(ranked).toHaveLength(entries.length);
    // The latest seq (7) weighs most.
    expect(ranked[0].lastSeq).toBe(7);
    expect(placeholderKeysOf(entries)).toEqual(expect.any(String));
  });

  it('stays linear on hostile input: 200 KB of one character in every recognizer', () => {
    const started = Date.now();
    for (const ch of ['a', '-', '=', ':', '/', '.', ' ', '@', '0']) FactsLedger.of([{ seq: 1, message: { role: 'user', blocks: [{ type: 'text', text: `x${ch.repeat(200_000)}y` }] } }]);
    // Not a timing assertion on speed: a super-linear scan takes minutes here, a linear one milliseconds.
    expect(Date.now() - started).toBeLessThan(20_000);
  });
});

describe('a huge tool output (issue #15: bounded in time)', () => {
  it('is read by its first and last LEDGER_SCAN_CHARS / 2 characters: keys there are found, the exit status at its end too', () => {
    const filler = (n: number) => 'INFO request served in 12 ms\n'.repeat(Math.ceil(n / 29)).slice(0, n);
    const text = [
      'https://ci.example.com/builds/4711 started',
      filler(LEDGER_SCAN_CHARS),
      'https://only-in-the-middle.example.com/x',
      filler(LEDGER_SCAN_CHARS),
      'ERROR: tests/test_api.py::test_upload FAILED',
      'exit code 1',
    ].join('\n');
    expect(scanWindow(text).length).toBe(LEDGER_SCAN_CHARS + 1);
    const ledger = FactsLedger.of([
      { seq: 1, message: { role: 'assistant', blocks: [{ type: 'tool_use', id: 't1', name: 'bash', input: { command: 'pytest -x' } }] } },
      { seq: 2, message: { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 't1', content: text, isError: true }] } },
    ]);
    const values = ledger.entries().map((e) => `${e.kind}:${e.value}${e.state ? ` (${e.state})` : ''}`);
    expect(values).toContain('url:https://ci.example.com/builds/4711');
    expect(values.some((v) => v.startsWith('url:https://only-in-the-middle'))).toBe(false);
    expect(values.some((v) => v.startsWith('command:pytest -x'))).toBe(true);
    expect(values.some((v) => v.includes('test_upload'))).toBe(true);
  });

  it('leaves a text within the window as it is', () => {
    expect(scanWindow('short')).toBe('short');
  });
});
