// ESLint rule `compactor/redos-safe`: every regular expression in the service's code must be
// proven linear-time by recheck's automaton checker (a proof, not a fuzzing guess). An agent's
// tool output is adversarial input, so one super-linear regex can stall a process for minutes.
// A regex the checker cannot decide (backreferences, lookaround, a pattern built at run time)
// fails too: rewrite it, or replace it by a scan. Two explicit lists, each entry with a reason:
// `allow` for regexes that never see user, tool or upstream text, and `pending` for known unsafe
// ones not yet rewritten (issue #15; the list only shrinks). An entry that no longer matches a
// regex in its file fails, so neither list can go stale; anything new fails.
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { checkSync } from 'recheck';

const require = createRequire(import.meta.url);
const RECHECK_VERSION = require('recheck/package.json').version;
const PARAMS = { checker: 'automaton', timeout: 60_000 };

// recheck's verdict depends only on the pattern, its flags, the parameters and recheck's version:
// keep them across runs (a fresh checkout checks every pattern once, ~1-20 s each).
const cacheFile = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../node_modules/.cache/compactor-redos-safe.json');
const cacheKey = `${RECHECK_VERSION} ${JSON.stringify(PARAMS)}`;
let verdicts;
function loadVerdicts() {
  if (verdicts) return verdicts;
  verdicts = new Map();
  try {
    const stored = JSON.parse(readFileSync(cacheFile, 'utf8'));
    if (stored.key === cacheKey) verdicts = new Map(Object.entries(stored.verdicts));
  } catch {
    // No cache yet.
  }
  return verdicts;
}
function saveVerdicts() {
  try {
    mkdirSync(path.dirname(cacheFile), { recursive: true });
    const tmp = `${cacheFile}.${process.pid}`;
    writeFileSync(tmp, JSON.stringify({ key: cacheKey, verdicts: Object.fromEntries(verdicts) }));
    renameSync(tmp, cacheFile);
  } catch {
    // A cache that cannot be written only costs time.
  }
}

/** recheck's verdict on one pattern, cached for the lint run (patterns repeat across files). */
export function verdictOf(source, flags) {
  const key = `${flags}/${source}`;
  let verdict = loadVerdicts().get(key);
  if (!verdict) {
    const d = checkSync(source, flags, PARAMS);
    if (d.status === 'safe') verdict = { safe: true, summary: d.complexity.summary };
    else if (d.status === 'vulnerable')
      verdict = { safe: false, summary: `${d.complexity.summary} (attack: ${JSON.stringify(d.attack.pattern).slice(0, 80)})` };
    else verdict = { safe: false, summary: `the checker cannot decide (${d.error.kind}${d.error.message ? `: ${d.error.message}` : ''})` };
    verdicts.set(key, verdict);
    // A timeout depends on the machine's load: never remember it.
    if (!(d.status === 'unknown' && d.error.kind === 'timeout')) saveVerdicts();
    else verdicts.delete(key);
  }
  return verdict;
}

function staticString(node) {
  if (!node) return '';
  if (node.type === 'Literal' && typeof node.value === 'string') return node.value;
  if (node.type === 'TemplateLiteral' && node.expressions.length === 0) return node.quasis[0].value.cooked;
  return undefined;
}

/** @type {import('eslint').Rule.RuleModule} */
export const redosSafe = {
  meta: {
    type: 'problem',
    docs: { description: 'every regular expression is proven linear-time by recheck' },
    schema: {
      definitions: {
        entries: {
          type: 'array',
          items: {
            type: 'object',
            properties: { file: { type: 'string' }, source: { type: 'string' }, reason: { type: 'string', minLength: 10 } },
            required: ['file', 'source', 'reason'],
            additionalProperties: false,
          },
        },
      },
      type: 'array',
      items: [
      {
        type: 'object',
        properties: {
          allow: { $ref: '#/definitions/entries' },
          pending: { $ref: '#/definitions/entries' },
        },
        additionalProperties: false,
      },
      ],
    },
    messages: {
      unsafe: 'Regular expression /{{source}}/{{flags}} is not proven linear-time: {{summary}}. Rewrite it or use a linear scan.',
      dynamic: 'RegExp built at run time ({{text}}) cannot be checked for ReDoS: build it from a literal pattern, or use a scan.',
      stale: 'Allow-list entry /{{source}}/ for this file matches no regular expression here: remove it.',
    },
  },
  create(context) {
    const file = context.filename.replace(/\\/g, '/');
    const options = context.options[0] ?? {};
    const allowed = [...(options.allow ?? []), ...(options.pending ?? [])].filter((entry) => file.endsWith(entry.file));
    const used = new Set();

    function check(node, source, flags) {
      const entry = allowed.find((a) => a.source === source);
      if (entry) {
        used.add(entry);
        return;
      }
      const verdict = verdictOf(source, flags);
      if (!verdict.safe) context.report({ node, messageId: 'unsafe', data: { source: source.slice(0, 120), flags, summary: verdict.summary } });
    }

    function constructed(node) {
      if (node.callee.type !== 'Identifier' || node.callee.name !== 'RegExp') return;
      const [patternArg, flagsArg] = node.arguments;
      const flags = flagsArg === undefined ? '' : staticString(flagsArg);
      if (patternArg?.type === 'Literal' && patternArg.regex) {
        check(node, patternArg.regex.pattern, flags ?? patternArg.regex.flags);
        return;
      }
      const source = staticString(patternArg);
      if (source === undefined || flags === undefined) {
        // A list entry names a run-time pattern by its expression's text.
        const text = patternArg ? context.sourceCode.getText(patternArg) : '';
        const entry = allowed.find((a) => a.source === text);
        if (entry) used.add(entry);
        else context.report({ node, messageId: 'dynamic', data: { text: text.slice(0, 120) } });
        return;
      }
      check(node, source, flags);
    }

    return {
      Literal(node) {
        if (!node.regex) return;
        // `new RegExp(/x/, 'g')` is checked once, with its flags, by `constructed`.
        const parent = node.parent;
        if ((parent.type === 'NewExpression' || parent.type === 'CallExpression') && parent.arguments[0] === node && parent.callee.name === 'RegExp') return;
        check(node, node.regex.pattern, node.regex.flags);
      },
      NewExpression: constructed,
      CallExpression: constructed,
      'Program:exit'(node) {
        for (const entry of allowed) if (!used.has(entry)) context.report({ node, messageId: 'stale', data: { source: entry.source } });
      },
    };
  },
};

export default { rules: { 'redos-safe': redosSafe } };
