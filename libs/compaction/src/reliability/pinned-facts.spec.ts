import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CanonicalMessage } from '../messages/canonical';
import { parseOpenAIMessages } from '../messages/openai';
import {
  checkFactsSurvival,
  contextTextOf,
  DEFAULT_MAX_PINNED_FACTS,
  extractPinnedFacts,
  PINNED_FACT_PRIORITY,
  PinnedFact,
  PinnedFactKind,
} from './pinned-facts';

// ---------------------------------------------------------------------------------------------
// Builders

const user = (text: string): CanonicalMessage => ({ role: 'user', blocks: [{ type: 'text', text }] });
const assistant = (text: string): CanonicalMessage => ({ role: 'assistant', blocks: [{ type: 'text', text }] });
let callId = 0;
/** An assistant tool call and its result. */
function call(name: string, input: unknown, output: string, isError = false): CanonicalMessage[] {
  const id = `toolu_${++callId}`;
  return [
    { role: 'assistant', blocks: [{ type: 'tool_use', id, name, input }] },
    { role: 'user', blocks: [{ type: 'tool_result', toolUseId: id, content: output, isError }] },
  ];
}

const valuesOf = (facts: PinnedFact[], kind: PinnedFactKind) => facts.filter((f) => f.kind === kind).map((f) => f.value);
const factsOf = (messages: CanonicalMessage[], kind: PinnedFactKind) => valuesOf(extractPinnedFacts(messages), kind);

// ---------------------------------------------------------------------------------------------
// Real sessions: SWE-agent trajectories (OpenAI shape)

const DATA = path.resolve(__dirname, '../../../../testdata/swe-agent-trajectories');
const TRAJECTORIES = readdirSync(DATA)
  .filter((f) => f.endsWith('.traj'))
  .sort();

function trajectory(file: string): CanonicalMessage[] {
  const history = JSON.parse(readFileSync(path.join(DATA, file), 'utf8')).history;
  const parsed = parseOpenAIMessages(history, 'history');
  if (!parsed.ok) throw new Error(`${file}: ${JSON.stringify(parsed.errors.slice(0, 3))}`);
  return parsed.value;
}
const SESSIONS = new Map(TRAJECTORIES.map((f) => [f, trajectory(f)]));
const session = (file: string) => SESSIONS.get(file) as CanonicalMessage[];
/** The span a compaction would take: everything but the (protected) system prompt. */
const span = (file: string) => session(file).filter((m) => m.role !== 'system');

describe('pinned-facts ledger: the rules', () => {
  it('paths: names with a file extension and rooted paths of two or more segments; never URLs, dotted names or a/b prose', () => {
    const facts = factsOf(
      [
        assistant(
          'The bug is in `src/marshmallow/fields.py:1474`; I also checked ./setup.py and /etc/nginx/conf.d, ' +
            'see https://github.com/org/repo/blob/dev/src/app.py for upstream. Use np.zeros and/or os.path here; ' +
            'the /testbed folder and the performance/ directory are not files. Config lives in C:\\Users\\me\\app.json.',
        ),
      ],
      'path',
    );
    expect(facts.sort()).toEqual(['/etc/nginx/conf.d', 'C:\\Users\\me\\app.json', 'setup.py', 'src/marshmallow/fields.py'].sort());
  });

  it('identifiers: snake_case, camelCase, PascalCase with an inner capital, dotted module paths, Type::method; never plain words', () => {
    const facts = factsOf(
      [
        assistant(
          'Calling value.total_seconds() in TimeDelta._serialize uses base_unit and the isValid flag; ' +
            'Rust calls Vec::with_capacity, Python runs __init__ and pkg.module.func. ' +
            'The Python code is fine.Then we move on, e.g. with URLs, IDs and a JavaScript file on GitHub. See AttributeError too.',
        ),
      ],
      'identifier',
    );
    expect(facts.sort()).toEqual(
      ['value.total_seconds', 'TimeDelta._serialize', 'base_unit', 'isValid', 'Vec::with_capacity', '__init__', 'pkg.module.func'].sort(),
    );
  });

  it('error codes: exception names, E/TS codes, HTTP statuses with their text, errno names, exit codes', () => {
    const facts = factsOf(
      [
        assistant('The run failed with a KeyError and tsc reported TS2304; flake8 says E999.'),
        ...call(
          'bash',
          { command: 'npm test' },
          'Error: connect ECONNREFUSED 127.0.0.1:5432\nupstream answered 429 Too Many Requests\nProcess exited with code 2\n200 OK fine',
        ),
      ],
      'error-code',
    );
    expect(facts.sort()).toEqual(['429 Too Many Requests', 'E999', 'ECONNREFUSED', 'KeyError', 'TS2304', 'exited with code 2'].sort());
  });

  it('commands: the first line of a shell tool call (whitespace collapsed, capped), argv arrays, shell code blocks; not an editor sub-command', () => {
    const long = `grep -rn ${'x'.repeat(200)} src`;
    const facts = factsOf(
      [
        ...call('Bash', { command: 'cd /repo &&   npm   test\necho second line' }, 'ok'),
        ...call('shell', { command: ['bash', '-lc', 'pytest -x tests/test_fields.py'] }, 'ok'),
        ...call('exec_command', { cmd: long }, 'ok'),
        ...call('str_replace_based_edit_tool', { command: 'view', path: '/repo/src/app.ts' }, 'file body'),
        assistant('Now run it:\n```bash\n$ python reproduce.py --verbose\n```\nand this is Python, not a command:\n```\nx = compute(1)\n```'),
      ],
      'command',
    );
    expect(facts.sort()).toEqual(['cd /repo && npm test', 'pytest -x tests/test_fields.py', long.slice(0, 120), 'python reproduce.py --verbose'].sort());
  });

  it('numbers: with a unit or in a key=value / key: value setting; a bare number is not a fact', () => {
    const facts = factsOf([assistant('Set timeout=30s and PORT: 8080; the call took 42 ms and used 128k tokens. The script printed 344, line 17 is wrong.')], 'number');
    expect(facts.sort()).toEqual(['128k', '42 ms', 'PORT: 8080', 'timeout=30s'].sort());
  });

  it('locked decisions: `[DECISION] … - LOCKED` markers of assistant text only; unlocked ones, quoted ones and user text are not', () => {
    const facts = extractPinnedFacts([
      user('[DECISION] Users decide nothing here - LOCKED'),
      assistant('[DECISION] Use JWT for authentication - LOCKED\n[DECISION] Maybe Redis - UNLOCKED\n```\n[DECISION] In a code block - LOCKED\n```'),
    ]);
    expect(valuesOf(facts, 'locked-decision')).toEqual(['Use JWT for authentication']);
    expect(facts[0]).toEqual({ kind: 'locked-decision', value: 'Use JWT for authentication' });
  });

  it('a huge tool output does not drown the ledger: its listing and code stay out, its error lines and what the agent names go in', () => {
    const listing = Array.from({ length: 400 }, (_, i) => `src/generated/module_${i}/handler_${i}.py`).join('\n');
    const code = Array.from({ length: 300 }, (_, i) => `${i + 1}:    result_${i} = compute_value(item_${i}, retries=${i})`).join('\n');
    const facts = extractPinnedFacts([
      ...call('bash', { command: 'find src -name "*.py"' }, listing),
      ...call('open', { path: 'src/generated/module_7/handler_7.py' }, `${code}\n  File "src/generated/module_7/handler_7.py", line 3\nZeroDivisionError: division by zero`),
      assistant('The failing one is `handler_7.py`, called from compute_value.'),
    ]);
    expect(valuesOf(facts, 'path')).toEqual(['src/generated/module_7/handler_7.py', 'handler_7.py']);
    expect(valuesOf(facts, 'error-code')).toEqual(['ZeroDivisionError']);
    expect(valuesOf(facts, 'identifier')).toEqual(['compute_value']);
    expect(valuesOf(facts, 'number')).toEqual([]);
    expect(facts.length).toBeLessThan(10);
  });

  it('code in an output that names exceptions (`raise ValueError`, `except KeyError`) reports no error', () => {
    const dump = ['1:def parse(x):', '2:    try:', '3:        return int(x)', '4:    except KeyError as error:', '5:        raise ValueError(x)'].join('\n');
    expect(factsOf(call('open', { path: 'src/parse.py' }, dump), 'error-code')).toEqual([]);
  });

  it('a text agent (SWE-agent) gets its command output as a user message: only its error lines count, not its listing', () => {
    const facts = extractPinnedFacts([
      user('Fix the crash in app/server.py, it started after the upgrade.'),
      assistant('Let me look around.\n```\nls -F\n```'),
      user('AUTHORS.rst  LICENSE  setup.py  tox.ini\nREADME.md\nnote: /etc/app/settings.ini is stale\n(Current directory: /repo)'),
      assistant('Now run the server.\n```\npython app/server.py\n```'),
      user('Traceback (most recent call last):\n  File "/repo/app/server.py", line 9, in <module>\n    start()\nOSError: [Errno 98] Address already in use'),
    ]);
    expect(valuesOf(facts, 'path')).toEqual(['app/server.py']);
    expect(valuesOf(facts, 'command').sort()).toEqual(['ls -F', 'python app/server.py']);
    expect(valuesOf(facts, 'error-code').sort()).toEqual(['Errno 98', 'OSError']);
  });

  it('a rooted path is counted under the relative spelling the agent used', () => {
    const facts = extractPinnedFacts([
      ...call('open', { path: 'src/marshmallow/fields.py' }, '[File: /testbed/src/marshmallow/fields.py (1997 lines total)]'),
      user('Traceback:\n  File "/testbed/src/marshmallow/fields.py", line 2\nTypeError: bad operand'),
    ]);
    expect(valuesOf(facts, 'path')).toEqual(['src/marshmallow/fields.py']);
  });

  it('deduplicates case- and whitespace-insensitively, keeping the most used spelling', () => {
    const facts = extractPinnedFacts([assistant('See README.md, readme.md and README.md; run `npm  test` then `npm test`.')]);
    expect(valuesOf(facts, 'path')).toEqual(['README.md']);
    expect(valuesOf(facts, 'command')).toEqual(['npm test']);
  });

  it('within a kind, the most mentioned first, then the latest; seq is the latest mention', () => {
    const facts = extractPinnedFacts(
      [assistant('Open a.py and b.py.'), assistant('Back to b.py, then c.py.'), assistant('Finally d.py and c.py.')],
      { firstSeq: 41 },
    );
    expect(facts.filter((f) => f.kind === 'path')).toEqual([
      { kind: 'path', value: 'c.py', seq: 43 },
      { kind: 'path', value: 'b.py', seq: 42 },
      { kind: 'path', value: 'd.py', seq: 43 },
      { kind: 'path', value: 'a.py', seq: 41 },
    ]);
    // A stored message's own seq wins over firstSeq.
    const stored = { ...assistant('Edit main.go now.'), seq: 7 } as CanonicalMessage;
    expect(extractPinnedFacts([stored], { firstSeq: 100 })).toEqual([{ kind: 'path', value: 'main.go', seq: 7 }]);
  });

  it('over the cap it keeps kinds in priority order (decisions, errors, paths, commands, identifiers, numbers) and caps each kind', () => {
    const messages = [
      assistant('[DECISION] Keep the public API stable - LOCKED'),
      assistant(Array.from({ length: 200 }, (_, i) => `file_${i}.ts raised Custom${i}Error with option_${i}=${i}ms via helper_name_${i}`).join('\n')),
    ];
    const facts = extractPinnedFacts(messages, { maxFacts: 100 });
    expect(facts).toHaveLength(100);
    expect(facts[0]).toEqual({ kind: 'locked-decision', value: 'Keep the public API stable' });
    const kinds = facts.map((f) => PINNED_FACT_PRIORITY.indexOf(f.kind));
    expect(kinds).toEqual([...kinds].sort((a, b) => a - b));
    // Error codes are capped at 60 by default, so paths fill the rest.
    expect(valuesOf(facts, 'error-code')).toHaveLength(60);
    expect(valuesOf(facts, 'path')).toHaveLength(39);

    const all = extractPinnedFacts(messages);
    expect(all.length).toBeLessThanOrEqual(DEFAULT_MAX_PINNED_FACTS);
    expect(all).toHaveLength(DEFAULT_MAX_PINNED_FACTS);
    expect(extractPinnedFacts(messages, { maxPerKind: { path: 5 } }).filter((f) => f.kind === 'path')).toHaveLength(5);
  });

  it('the system prompt (protected, never compacted) and thinking are not read', () => {
    const facts = extractPinnedFacts([
      { role: 'system', blocks: [{ type: 'text', text: 'Tools live in /opt/tools/bin and config.yaml.' }] },
      { role: 'assistant', blocks: [{ type: 'thinking', thinking: 'maybe secret_plan.md', signature: 'sig' }] },
    ]);
    expect(facts).toEqual([]);
  });
});

describe('pinned-facts ledger on real agent sessions (SWE-agent trajectories)', () => {
  // What a human reading each session would pin, and facts found only in dumps that must stay out.
  const EXPECTED: Record<string, { has: Array<[PinnedFactKind, string]>; hasNot: string[] }> = {
    'ctf_web_i_got_id.traj': {
      has: [
        ['path', 'printenv.pl'],
        ['path', '/etc/passwd'],
        ['command', 'curl http://web.chal.csaw.io:8000/cgi-bin/file.pl'],
        ['identifier', 'p3rl_6_iz_EVEN_BETTER'],
      ],
      hasNot: ['/usr/sbin/nologin', '/var/spool/news'],
    },
    'function_calling_simple.traj': {
      has: [
        ['path', 'tests/missing_colon.py'],
        ['error-code', 'SyntaxError'],
        ['command', 'python tests/missing_colon.py'],
      ],
      hasNot: [],
    },
    'marshmallow-1867__function_calling.traj': {
      has: [
        ['path', 'src/marshmallow/fields.py'],
        ['path', 'reproduce.py'],
        ['error-code', 'IndentationError'],
        ['error-code', 'E999'],
        ['command', 'python reproduce.py'],
        ['identifier', 'TimeDelta'],
        ['identifier', 'value.total_seconds'],
        ['number', 'milliseconds=345'],
      ],
      hasNot: ['AUTHORS.rst', 'FieldInstanceResolutionError', 'OverflowError', 'self.MINUTES'],
    },
    'marshmallow-1867__function_calling_replace_from_source.traj': {
      has: [
        ['path', 'src/marshmallow/fields.py'],
        ['path', 'setup.py'],
        ['command', 'pip install -e .[dev]'],
        ['identifier', 'TimeDelta'],
      ],
      hasNot: ['AUTHORS.rst', 'FieldInstanceResolutionError'],
    },
    'pydicom-1458__gpt4.traj': {
      has: [
        ['path', 'pydicom/pixel_data_handlers/numpy_handler.py'],
        ['path', 'reproduce_bug.py'],
        ['error-code', 'AttributeError'],
        ['command', 'python reproduce_bug.py'],
        ['command', 'open pydicom/pixel_data_handlers/numpy_handler.py 293'],
        ['identifier', 'PixelRepresentation'],
        ['identifier', 'pixel_array'],
      ],
      hasNot: ['pydicom__pydicom', 'pydicom/overlays/numpy_handler.py', 'pydicom/waveforms/numpy_handler.py'],
    },
  };

  it('covers every trajectory of testdata', () => {
    expect(Object.keys(EXPECTED).sort()).toEqual(TRAJECTORIES);
  });

  it.each(TRAJECTORIES)('%s: finds what a human would pin, leaves out what only dumps mention, stays under the cap', (file) => {
    const facts = extractPinnedFacts(span(file));
    const keys = facts.map((f) => `${f.kind} ${f.value}`);
    for (const [kind, value] of EXPECTED[file].has) expect(keys).toContain(`${kind} ${value}`);
    const values = facts.map((f) => f.value);
    for (const value of EXPECTED[file].hasNot) expect(values).not.toContain(value);
    expect(facts.length).toBeGreaterThan(0);
    expect(facts.length).toBeLessThanOrEqual(DEFAULT_MAX_PINNED_FACTS);
    expect(new Set(facts.map((f) => `${f.kind} ${f.value.toLowerCase()}`)).size).toBe(facts.length);
  });

  it('all five sessions as one long span stay under the cap, in priority order', () => {
    const long = TRAJECTORIES.flatMap(span);
    const facts = extractPinnedFacts(long);
    expect(facts.length).toBeLessThanOrEqual(DEFAULT_MAX_PINNED_FACTS);
    const ranks = facts.map((f) => PINNED_FACT_PRIORITY.indexOf(f.kind));
    expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
    // A smaller cap keeps the head of the same ranking.
    expect(extractPinnedFacts(long, { maxFacts: 40 })).toEqual(facts.slice(0, 40));
  });

  it.each(TRAJECTORIES)('%s: the whole context holds every fact (share 1)', (file) => {
    const facts = extractPinnedFacts(span(file));
    const survival = checkFactsSurvival(facts, contextTextOf(session(file)));
    expect(survival.missing).toEqual([]);
    expect(survival).toMatchObject({ total: facts.length, survived: facts.length, share: 1 });
  });

  it.each(TRAJECTORIES)('%s: replacing the first half by a short summary loses facts (share < 1), and the summary keeps what it names', (file) => {
    const all = session(file);
    const system = all.filter((m) => m.role === 'system');
    const rest = all.filter((m) => m.role !== 'system');
    const cut = Math.floor(rest.length / 2);
    const compacted = rest.slice(0, cut);
    const facts = extractPinnedFacts(compacted);
    const summary = user('[Checkpoint] Earlier the agent explored the repository and reproduced the issue.');
    const after = checkFactsSurvival(facts, contextTextOf([...system, summary, ...rest.slice(cut)]));
    expect(after.share).toBeLessThan(1);
    expect(after.survived + after.missing.length).toBe(facts.length);

    const named = facts.slice(0, 5);
    const better = user(`[Checkpoint] Earlier: ${named.map((f) => f.value).join('; ')}.`);
    const afterBetter = checkFactsSurvival(facts, contextTextOf([...system, better, ...rest.slice(cut)]));
    expect(afterBetter.survived).toBeGreaterThanOrEqual(after.survived + named.filter((f) => after.missing.includes(f)).length);
    expect(afterBetter.share).toBeGreaterThan(after.share - 1e-9);
  });

  it('is deterministic: the same span gives the same ledger, also from a copy', () => {
    const long = TRAJECTORIES.flatMap(span);
    const first = extractPinnedFacts(long, { firstSeq: 1 });
    expect(extractPinnedFacts(long, { firstSeq: 1 })).toEqual(first);
    expect(extractPinnedFacts(structuredClone(long), { firstSeq: 1 })).toEqual(first);
  });

  it('is fast: the five sessions in well under a second', () => {
    const long = TRAJECTORIES.flatMap(span);
    const start = performance.now();
    extractPinnedFacts(long);
    expect(performance.now() - start).toBeLessThan(1000);
  });
});

describe('fact survival', () => {
  const ledger: PinnedFact[] = [
    { kind: 'path', value: 'src/Auth/Login.ts' },
    { kind: 'command', value: `npm run test -- --runInBand --testPathPattern=auth ${'--verbose '.repeat(10)}`.trim() },
    { kind: 'locked-decision', value: 'Use JWT for authentication' },
    { kind: 'number', value: 'timeout=30s' },
  ];

  it('an empty ledger has share 1', () => {
    expect(checkFactsSurvival([], 'anything')).toEqual({ total: 0, survived: 0, share: 1, missing: [] });
  });

  it('matches case-insensitively with whitespace collapsed; a command by its first 60 characters; a locked decision by its text', () => {
    const context = [
      'Edited SRC/auth/login.ts.',
      'Ran npm run test --   --runInBand --testPathPattern=auth --verbose (truncated)',
      'LOCKED DECISIONS:\n🔒 Use JWT for\n  authentication',
    ];
    const result = checkFactsSurvival(ledger, { texts: context });
    expect(result).toEqual({ total: 4, survived: 3, share: 0.75, missing: [ledger[3]] });
    expect(checkFactsSurvival(ledger, context.join('\n'))).toEqual(result);
  });

  it('a command whose start differs does not survive', () => {
    expect(checkFactsSurvival([ledger[1]], 'ran the tests with npm').missing).toEqual([ledger[1]]);
  });

  it('contextTextOf reads text, tool calls (name, JSON input and its strings as typed), tool results and their parts', () => {
    const text = contextTextOf([
      assistant('hello'),
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 't1', name: 'bash', input: { command: 'grep -n "a b" x.py' } }] },
      { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 't1', content: [{ type: 'text', text: 'part one' }], isError: false }] },
      { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 't2', content: 'plain result', isError: true }] },
    ]);
    for (const piece of ['hello', 'bash {"command":"grep -n \\"a b\\" x.py"}', 'grep -n "a b" x.py', 'part one', 'plain result']) {
      expect(text).toContain(piece);
    }
  });

  it('property: every fact is a verbatim piece of its span, so the span itself always holds the whole ledger', () => {
    const fragment = fc.oneof(
      fc.constantFrom(
        'src/app/main.ts',
        '/etc/hosts',
        'KeyError',
        'ECONNRESET',
        'exit code 1',
        '503 Service Unavailable',
        'timeout=30s',
        '42 ms',
        'user_id',
        'parseConfig',
        'HttpClient',
        'pkg.mod.fn',
        'A::b',
        '`npm test`',
        '[DECISION] Keep it - LOCKED',
        '```bash\nmake build\n```',
        'https://x.io/a/b.py',
        '\n',
        '  ',
        '. ',
        ': ',
        '=',
      ),
      fc.string({ maxLength: 12 }),
    );
    const text = fc.array(fragment, { maxLength: 25 }).map((parts) => parts.join(' '));
    const message = fc.oneof(
      text.map((t) => assistant(t)),
      text.map((t) => user(t)),
      fc.tuple(text, text).map(([input, output]) => call('bash', { command: input, path: 'x/y.py' }, output)),
    );
    fc.assert(
      fc.property(fc.array(message, { maxLength: 6 }), (messages) => {
        const flat = messages.flat();
        const facts = extractPinnedFacts(flat);
        expect(checkFactsSurvival(facts, contextTextOf(flat)).missing).toEqual([]);
        expect(extractPinnedFacts(flat)).toEqual(facts);
      }),
      { numRuns: 200 },
    );
  });
});
