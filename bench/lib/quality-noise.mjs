// Realistic filler for the quality benchmark's generated sessions: source files, test runs
// with tracebacks, grep results, shell output, assistant reasoning and user follow-ups, in
// three project flavours (Python service, TypeScript service, Go service). Nothing here states
// a planted fact: its vocabulary (NOISE_WORDS) shares no word with the facts' vocabulary
// (quality-generator.mjs), so a fact can only be found where it was planted.

export const NOISE_WORDS = ['user', 'account', 'order', 'item', 'payload', 'record', 'cursor', 'limit', 'status', 'result', 'config',
  'session', 'request', 'response', 'client', 'value', 'entry', 'event', 'handler', 'context', 'query', 'field', 'schema', 'row',
  'total', 'count', 'page', 'filter', 'owner', 'group', 'label', 'state', 'kind', 'source', 'target', 'amount', 'address', 'email',
  'profile', 'report', 'metric', 'stamp', 'price', 'product', 'cart', 'line', 'note', 'comment', 'team', 'member', 'role', 'permission'];

const VERBS = ['get', 'build', 'load', 'parse', 'update', 'create', 'delete', 'list', 'find', 'merge', 'apply', 'check', 'format', 'sync', 'fetch', 'save', 'resolve', 'compute'];
const SENTENCE_BITS = {
  looks: ['looks like', 'seems to be', 'is probably', 'might be', 'is clearly'],
  adjectives: ['unrelated', 'a red herring', 'expected', 'the interesting part', 'noise from the fixtures', 'a leftover from an older refactor'],
};

export const cap = (s) => s[0].toUpperCase() + s.slice(1);
const camel = (parts) => parts[0] + parts.slice(1).map(cap).join('');
const pascal = (parts) => parts.map(cap).join('');

/** Names of one generated project's ordinary code (the noise the facts hide in). */
export function projectNames(r, flavour) {
  const words = () => [r.pick(NOISE_WORDS), r.pick(NOISE_WORDS)].filter((w, i, a) => a.indexOf(w) === i);
  const files = [];
  const funcs = [];
  const types = [];
  for (let i = 0; i < 40; i += 1) {
    const w = words();
    funcs.push(flavour === 'python' ? `${r.pick(VERBS)}_${w.join('_')}` : camel([r.pick(VERBS), ...w]));
  }
  for (let i = 0; i < 14; i += 1) types.push(pascal(words()));
  const dirs = {
    python: ['src/app/api', 'src/app/services', 'src/app/models', 'src/app/core', 'src/app/workers'],
    typescript: ['src/modules/orders', 'src/modules/users', 'src/common', 'src/infra/db', 'src/modules/reports'],
    go: ['internal/server', 'internal/store', 'internal/service', 'internal/platform', 'cmd/api'],
  }[flavour];
  for (let i = 0; i < 14; i += 1) {
    const w = words();
    const dir = r.pick(dirs);
    if (flavour === 'python') files.push(`${dir}/${w.join('_')}.py`);
    else if (flavour === 'typescript') files.push(`${dir}/${w.join('-')}.${r.pick(['service', 'controller', 'repository', 'util'])}.ts`);
    else files.push(`${dir}/${w.join('_')}.go`);
  }
  const tests = files.slice(0, 8).map((f) => {
    if (flavour === 'python') return f.replace(/^src\/app\/[a-z]+\//, 'tests/test_').replace(/\/test_([^/]+)$/, '/test_$1');
    if (flavour === 'typescript') return f.replace(/\.ts$/, '.spec.ts');
    return f.replace(/\.go$/, '_test.go');
  });
  return { files, tests, funcs, types, words: NOISE_WORDS };
}

function ident(r, names) {
  return r.pick(names.words);
}

// ---------------------------------------------------------------- source code

function pyBody(r, n, names) {
  const a = ident(r, names);
  const b = ident(r, names);
  const out = [];
  while (out.length < n) {
    switch (r.int(0, 9)) {
      case 0: out.push(`${a} = ${b}.get("${ident(r, names)}")`); break;
      case 1: out.push(`if ${a} is None:`, `    return None`); break;
      case 2: out.push(`for ${a} in ${b}_list:`, `    ${a}.${ident(r, names)} = ${r.int(0, 99)}`); break;
      case 3: out.push(`logger.debug("${r.pick(VERBS)} %s for %s", ${a}, ${b}.id)`); break;
      case 4: out.push(`${a} = self._${b}_repo.${r.pick(names.funcs)}(${a}_id)`); break;
      case 5: out.push(`if not ${a}:`, `    raise ValueError(f"invalid ${a}: {${a}!r}")`); break;
      case 6: out.push(`# ${sentence(r, names)}`); break;
      case 7: out.push(`total += ${a}.${b} * ${r.int(2, 12)}`); break;
      case 8: out.push(`${a}s = [${b} for ${b} in ${a}s if ${b}.${ident(r, names)} != ${r.int(0, 9)}]`); break;
      default: out.push(`return ${a}`);
    }
  }
  return out;
}

function tsBody(r, n, names) {
  const a = ident(r, names);
  const b = ident(r, names);
  const T = r.pick(names.types);
  const out = [];
  while (out.length < n) {
    switch (r.int(0, 9)) {
      case 0: out.push(`const ${a} = await this.${b}Repository.findOne({ where: { id: ${a}Id } });`); break;
      case 1: out.push(`if (!${a}) {`, `  throw new NotFoundException(\`${T} \${${a}Id} not found\`);`, `}`); break;
      case 2: out.push(`for (const ${a} of ${b}s) {`, `  ${a}.${ident(r, names)} = ${r.int(0, 99)};`, `}`); break;
      case 3: out.push(`this.logger.debug({ ${a}, ${b} }, '${r.pick(VERBS)} ${a}');`); break;
      case 4: out.push(`const ${a}s = ${b}s.filter((x) => x.${ident(r, names)} !== ${r.int(0, 9)});`); break;
      case 5: out.push(`// ${sentence(r, names)}`); break;
      case 6: out.push(`const ${b} = ${r.pick(names.funcs)}(${a}, { ${ident(r, names)}: true });`); break;
      case 7: out.push(`total += ${a}.${b} * ${r.int(2, 12)};`); break;
      case 8: out.push(`await this.${a}Queue.add('${r.pick(VERBS)}', { id: ${a}.id });`); break;
      default: out.push(`return ${a};`);
    }
  }
  return out;
}

function goBody(r, n, names) {
  const a = ident(r, names);
  const b = ident(r, names);
  const T = r.pick(names.types);
  const out = [];
  while (out.length < n) {
    switch (r.int(0, 8)) {
      case 0: out.push(`${a}, err := s.store.Get${T}(ctx, ${a}ID)`, `if err != nil {`, `\treturn nil, fmt.Errorf("get ${a}: %w", err)`, `}`); break;
      case 1: out.push(`for _, ${a} := range ${b}s {`, `\t${a}.${cap(ident(r, names))} = ${r.int(0, 99)}`, `}`); break;
      case 2: out.push(`s.log.Debug("${r.pick(VERBS)} ${a}", "id", ${a}.ID, "${b}", ${b})`); break;
      case 3: out.push(`// ${sentence(r, names)}`); break;
      case 4: out.push(`if ${a} == nil {`, `\treturn nil, Err${T}NotFound`, `}`); break;
      case 5: out.push(`total += ${a}.${cap(b)} * ${r.int(2, 12)}`); break;
      case 6: out.push(`defer ${a}.Close()`); break;
      case 7: out.push(`${b} := make(map[string]*${T}, len(${a}s))`); break;
      default: out.push(`return ${a}, nil`);
    }
  }
  return out;
}

/** A plausible source file in the flavour's language, as lines (no numbers). */
export function sourceLines(r, flavour, names, count) {
  const lines = [];
  if (flavour === 'python') {
    lines.push('"""' + cap(sentence(r, names)) + '"""', 'from __future__ import annotations', '', 'import logging', 'from datetime import datetime, timedelta',
      'from typing import Any, Optional', '', `from app.core.${ident(r, names)} import ${r.pick(names.types)}`, '', 'logger = logging.getLogger(__name__)', '');
    while (lines.length < count) {
      if (r.chance(0.3)) {
        lines.push('', `class ${r.pick(names.types)}:`, `    """${cap(sentence(r, names))}"""`, '');
        for (let m = 0; m < r.int(1, 3); m += 1) {
          lines.push(`    def ${r.pick(names.funcs)}(self, ${ident(r, names)}: ${r.pick(names.types)}) -> Optional[${r.pick(names.types)}]:`);
          lines.push(...pyBody(r, r.int(3, 9), names).map((l) => `        ${l}`), '');
        }
      } else {
        lines.push('', `def ${r.pick(names.funcs)}(${ident(r, names)}, ${ident(r, names)}=None):`, `    """${cap(sentence(r, names))}"""`);
        lines.push(...pyBody(r, r.int(3, 12), names).map((l) => `    ${l}`));
      }
    }
  } else if (flavour === 'typescript') {
    lines.push(`import { Injectable, Logger, NotFoundException } from '@nestjs/common';`, `import { ${r.pick(names.types)} } from '../${ident(r, names)}/${ident(r, names)}.entity';`,
      `import { ${r.pick(names.funcs)} } from '../../common/${ident(r, names)}';`, '', '@Injectable()', `export class ${r.pick(names.types)}Service {`,
      `  private readonly logger = new Logger(${r.pick(names.types)}Service.name);`, '');
    while (lines.length < count) {
      lines.push(`  /** ${cap(sentence(r, names))} */`, `  async ${r.pick(names.funcs)}(${ident(r, names)}Id: string, opts: ${r.pick(names.types)}Options = {}): Promise<${r.pick(names.types)}> {`);
      lines.push(...tsBody(r, r.int(3, 12), names).map((l) => `    ${l}`), '  }', '');
    }
    lines.push('}');
  } else {
    lines.push(`package ${ident(r, names)}`, '', 'import (', '\t"context"', '\t"fmt"', '\t"log/slog"', '', `\t"github.com/acme/platform/internal/${ident(r, names)}"`, ')', '');
    while (lines.length < count) {
      const T = r.pick(names.types);
      lines.push(`// ${cap(r.pick(names.funcs))} ${sentence(r, names)}`, `func (s *${T}Service) ${cap(r.pick(names.funcs))}(ctx context.Context, ${ident(r, names)}ID string) (*${T}, error) {`);
      lines.push(...goBody(r, r.int(3, 12), names).map((l) => `\t${l}`), '}', '');
    }
  }
  return lines.slice(0, Math.max(count, 1));
}

export function sentence(r, names) {
  const f = () => r.pick(names.funcs);
  const w = () => ident(r, names);
  const templates = [
    () => `${f()} ${r.pick(SENTENCE_BITS.looks)} where the ${w()} gets its ${w()}`,
    () => `keep the ${w()} ${w()} in sync with ${f()}`,
    () => `the ${w()} list is sorted by ${w()} before paging`,
    () => `callers pass the ${w()} id, not the ${w()} itself`,
    () => `fall back to the default ${w()} when the ${w()} is empty`,
    () => `this runs once per ${w()} batch`,
    () => `${w()} values are cached for a few minutes`,
    () => `only admins can change the ${w()} of a ${w()}`,
  ];
  return r.pick(templates)();
}

// ---------------------------------------------------------------- tool outputs

export function fileListing(r, flavour, names, file, style) {
  const total = r.int(120, 900);
  const count = r.int(25, 120);
  const start = r.int(1, Math.max(1, total - count));
  const lines = sourceLines(r, flavour, names, count);
  if (style === 'swe') {
    return [`[File: /workspace/${file} (${total} lines total)]`, ...(start > 1 ? [`(${start - 1} more lines above)`] : []),
      ...lines.map((l, i) => `${start + i}:${l}`), `(${Math.max(0, total - start - count)} more lines below)`].join('\n');
  }
  return lines.map((l, i) => `${String(start + i).padStart(6)}\t${l}`).join('\n');
}

function pyTestRun(r, names, failing) {
  const out = ['============================= test session starts ==============================',
    'platform linux -- Python 3.11.6, pytest-7.4.3, pluggy-1.3.0', 'rootdir: /workspace', 'plugins: cov-4.1.0, asyncio-0.21.1, xdist-3.5.0',
    `collected ${r.int(20, 300)} items`, ''];
  for (const t of names.tests.slice(0, r.int(3, names.tests.length))) {
    const n = r.int(3, 40);
    const marks = Array.from({ length: n }, () => (failing && r.chance(0.08) ? 'F' : '.')).join('');
    out.push(`${t} ${marks}${' '.repeat(Math.max(1, 60 - t.length - n))}[${String(r.int(1, 100)).padStart(3)}%]`);
  }
  if (failing && !failing.inline) {
    out.push('', '=================================== FAILURES ===================================');
    const test = `test_${r.pick(names.funcs)}`;
    out.push(`_________________________ ${test} _________________________`, '');
    out.push(...pyBody(r, r.int(4, 12), names).map((l) => `    ${l}`));
    out.push('>       assert result.status_code == 200', `E       assert ${r.pick([404, 500, 409, 422])} == 200`, '');
    out.push(`${r.pick(names.tests)}:${r.int(20, 400)}: AssertionError`);
  }
  return out;
}

function tsTestRun(r, names, failing) {
  const out = [];
  for (const t of names.tests.slice(0, r.int(3, names.tests.length))) {
    const fail = failing && r.chance(0.2);
    out.push(`${fail ? ' FAIL ' : ' PASS '} ${t} (${r.int(1, 9)}.${r.int(100, 999)} s)`);
    for (let i = 0; i < r.int(2, 9); i += 1) out.push(`  ${r.chance(0.95) ? '✓' : '✕'} ${sentence(r, names)} (${r.int(1, 90)} ms)`);
    if (fail) {
      out.push('', `  ● ${r.pick(names.types)}Service › ${sentence(r, names)}`, '', '    expect(received).toEqual(expected) // deep equality', '',
        `    Expected: ${r.int(1, 50)}`, `    Received: ${r.int(51, 99)}`, '');
      out.push(...tsBody(r, r.int(3, 8), names).map((l, i) => `      ${r.int(10, 300) + i} | ${l}`));
    }
  }
  out.push('', `Test Suites: ${r.int(0, 2)} failed, ${r.int(10, 40)} passed, ${r.int(12, 42)} total`, `Tests:       ${r.int(0, 3)} failed, ${r.int(80, 400)} passed`,
    `Time:        ${r.int(4, 60)}.${r.int(100, 999)} s`, 'Ran all test suites.');
  return out;
}

function goTestRun(r, names, failing) {
  const out = [];
  for (const t of names.tests.slice(0, r.int(3, names.tests.length))) {
    for (let i = 0; i < r.int(2, 8); i += 1) {
      const name = `Test${cap(r.pick(names.funcs))}`;
      out.push(`=== RUN   ${name}`);
      if (failing && r.chance(0.1)) out.push(`    ${t.split('/').pop()}:${r.int(20, 300)}: got ${r.int(0, 9)}, want ${r.int(10, 19)}`, `--- FAIL: ${name} (0.0${r.int(0, 9)}s)`);
      else out.push(`--- PASS: ${name} (0.0${r.int(0, 9)}s)`);
    }
    out.push(`ok  \tgithub.com/acme/platform/${t.replace(/\/[^/]+$/, '')}\t${r.int(0, 3)}.${r.int(100, 999)}s`);
  }
  return out;
}

/** A test run in the flavour's runner; `extra` lines (a planted error) go where a failure would. */
export function testRun(r, flavour, names, { failing = r.chance(0.4), extra = [] } = {}) {
  const lines = flavour === 'python' ? pyTestRun(r, names, failing && !extra.length) : flavour === 'typescript' ? tsTestRun(r, names, failing && !extra.length) : goTestRun(r, names, failing && !extra.length);
  if (extra.length) {
    const at = Math.max(1, lines.length - r.int(1, 4));
    lines.splice(at, 0, '', ...extra, '');
  }
  return lines.join('\n');
}

export function grepOutput(r, flavour, names, pattern) {
  const out = [];
  for (let i = 0; i < r.int(4, 30); i += 1) {
    const body = (flavour === 'python' ? pyBody : flavour === 'typescript' ? tsBody : goBody)(r, 1, names)[0].trim();
    out.push(`${r.pick([...names.files, ...names.tests])}:${r.int(1, 900)}:${body}`);
  }
  if (pattern && r.chance(0.3)) out.push(`${r.pick(names.files)}:${r.int(1, 900)}:    # TODO: ${sentence(r, names)}`);
  return out.join('\n');
}

export function shellOutput(r, flavour, names) {
  const kind = r.int(0, 5);
  const out = [];
  if (kind === 0) {
    out.push('On branch ' + r.pick(['main', `fix/${r.pick(names.words)}-${r.pick(names.words)}`]), "Changes not staged for commit:", '  (use "git add <file>..." to update what will be committed)', '');
    for (const f of names.files.slice(0, r.int(2, 8))) out.push(`\tmodified:   ${f}`);
    out.push('', 'no changes added to commit (use "git add" and/or "git commit -a")');
  } else if (kind === 1) {
    for (let i = 0; i < r.int(8, 30); i += 1) out.push(`${r.int(0x1000000, 0xfffffff).toString(16)} ${cap(sentence(r, names))}`);
  } else if (kind === 2) {
    out.push(`diff --git a/${r.pick(names.files)} b/${r.pick(names.files)}`, `index ${r.int(0x100000, 0xffffff).toString(16)}..${r.int(0x100000, 0xffffff).toString(16)} 100644`);
    for (let h = 0; h < r.int(1, 4); h += 1) {
      out.push(`@@ -${r.int(1, 300)},${r.int(5, 20)} +${r.int(1, 300)},${r.int(5, 20)} @@`);
      const body = sourceLines(r, flavour, names, r.int(6, 20));
      body.forEach((l) => out.push(`${r.chance(0.2) ? r.pick(['+', '-']) : ' '}${l}`));
    }
  } else if (kind === 3) {
    out.push(`total ${r.int(40, 400)}`);
    for (const f of [...names.files, ...names.tests].slice(0, r.int(6, 22))) {
      out.push(`-rw-r--r--  1 dev  staff  ${String(r.int(200, 40000)).padStart(6)} Nov ${r.int(1, 28)} ${r.int(10, 23)}:${r.int(10, 59)} ${f.split('/').pop()}`);
    }
  } else if (kind === 4) {
    const svc = r.pick(['api', 'worker', 'db', 'cache']);
    for (let i = 0; i < r.int(10, 40); i += 1) {
      out.push(`${svc}-1  | ${r.pick(['INFO', 'INFO', 'DEBUG', 'WARN'])} ${r.int(10, 23)}:${r.int(10, 59)}:${r.int(10, 59)}.${r.int(100, 999)} ${r.pick(names.funcs)} ${r.pick(names.words)}=${r.int(1, 9999)} ${r.pick(names.words)}=${r.pick(names.words)} took=${r.int(1, 900)}ms`);
    }
  } else {
    const mgr = flavour === 'python' ? 'pip' : flavour === 'typescript' ? 'npm' : 'go';
    for (let i = 0; i < r.int(6, 30); i += 1) {
      const pkg = `${r.pick(names.words)}-${r.pick(['utils', 'core', 'sdk', 'kit', 'lib'])}`;
      if (mgr === 'pip') out.push(`Requirement already satisfied: ${pkg}>=${r.int(0, 4)}.${r.int(0, 20)} in /usr/local/lib/python3.11/site-packages (${r.int(0, 4)}.${r.int(0, 20)}.${r.int(0, 9)})`);
      else if (mgr === 'npm') out.push(`npm warn deprecated ${pkg}@${r.int(0, 4)}.${r.int(0, 20)}.${r.int(0, 9)}: ${cap(sentence(r, names))}`);
      else out.push(`go: downloading github.com/${r.pick(names.words)}/${pkg} v${r.int(0, 4)}.${r.int(0, 20)}.${r.int(0, 9)}`);
    }
    if (mgr === 'npm') out.push('', `added ${r.int(1, 40)} packages, changed ${r.int(0, 9)} packages, and audited ${r.int(800, 1600)} packages in ${r.int(2, 40)}s`);
  }
  return out.join('\n');
}

// ---------------------------------------------------------------- conversation text

export function reasoning(r, names, sentences = r.int(1, 3)) {
  const f = () => `\`${r.pick(names.funcs)}\``;
  const file = () => `\`${r.pick(names.files)}\``;
  const w = () => r.pick(names.words);
  const templates = [
    () => `Let me look at how the ${w()} is handled in ${file()}.`,
    () => `The ${w()} path goes through ${f()}; I'll read it before changing anything.`,
    () => `Most tests pass; the one failure is in ${f()} and looks ${r.pick(SENTENCE_BITS.adjectives)}.`,
    () => `I'll grep for other callers of ${f()} to make sure the change is safe.`,
    () => `That output is long; the relevant part is around line ${r.int(20, 600)}.`,
    () => `OK, ${f()} returns early when the ${w()} is empty, which explains the missing rows.`,
    () => `Running the focused tests again to confirm.`,
    () => `${cap(w())} and ${w()} are both loaded eagerly here, which is wasteful but not our bug.`,
    () => `Now let me check ${file()} for the same pattern.`,
    () => `I want to see the ${w()} model first, then the service that writes it.`,
    () => `This matches what the logs showed: the ${w()} is written twice within the same request.`,
    () => `Nothing suspicious in the diff so far.`,
    () => `Before editing, I'll list the directory to see what else lives next to ${file()}.`,
    () => `The helper ${f()} is only used in two places, so refactoring it is cheap.`,
    () => `Looking at the call chain again: the request handler calls ${f()}, which builds the ${w()} and hands it to ${f()}; if that one raises, the ${w()} is already half written, and nothing rolls it back.`,
    () => `There are two ways to fix this: guard the ${w()} write in ${f()}, or make ${f()} idempotent so a retry is harmless. The second is more robust, but it touches more code, so I'll look at the callers first.`,
    () => `I don't want to change behaviour for existing ${w()}s, so whatever I do has to keep the current ${w()} format readable.`,
    () => `The test fixtures create the ${w()} and the ${w()} in one transaction, which hides the race we see in production; a test that reproduces it needs two separate sessions.`,
  ];
  return Array.from({ length: sentences }, () => r.pick(templates)()).join(' ');
}

export function userFollowup(r, names) {
  return r.pick([
    () => 'How is it going?',
    () => 'Sounds good, carry on.',
    () => `Can you also double-check the logging around \`${r.pick(names.funcs)}\`?`,
    () => 'FYI CI is green on main right now.',
    () => 'Take your time, no rush on this one.',
    () => `Is the ${r.pick(names.words)} part done yet?`,
    () => 'Thanks. Keep going.',
  ])();
}

export function statusUpdate(r, names) {
  return r.pick([
    () => `Quick status: I've traced the ${r.pick(names.words)} flow through \`${r.pick(names.files)}\` and I'm now narrowing it down.`,
    () => `Progress so far: the failing path is isolated; next I'm checking \`${r.pick(names.funcs)}\`.`,
    () => `Still investigating. The ${r.pick(names.words)} handling looks right, so the problem is further down.`,
  ])();
}
