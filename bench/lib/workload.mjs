// Benchmark workloads: generated coding-agent sessions in which tool output is about 80% of
// the tokens (file reads, test runs, greps, shell commands), in both provider shapes, and the
// real SWE-agent sessions in testdata/. Performance only: nothing here feeds the
// summarizer or the quality benchmark.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { rng } from './random.mjs';

const IDENTS = ['session', 'budget', 'tokens', 'message', 'context', 'parser', 'result', 'config', 'handler', 'request',
  'response', 'payload', 'cursor', 'offset', 'window', 'reserve', 'policy', 'stage', 'worker', 'queue', 'index', 'value'];
const WORDS = ['the', 'failing', 'test', 'expects', 'a', 'rounded', 'value', 'but', 'we', 'return', 'the', 'raw', 'one', 'so',
  'I', 'will', 'check', 'where', 'it', 'is', 'computed', 'and', 'fix', 'the', 'edge', 'case', 'in', 'serialization', 'next'];
const FILES = ['src/fields.py', 'src/schema.py', 'src/utils.py', 'tests/test_fields.py', 'src/api/routes.ts', 'src/db/models.ts',
  'lib/parser.rb', 'cmd/server/main.go', 'src/components/Table.tsx', 'README.md', 'setup.cfg', 'package.json'];

function sentence(r, words) {
  const out = [];
  for (let i = 0; i < words; i += 1) out.push(r.pick(WORDS));
  const s = out.join(' ');
  return s[0].toUpperCase() + s.slice(1) + '.';
}

function codeLine(r, n) {
  const indent = '    '.repeat(r.int(0, 3));
  const a = r.pick(IDENTS);
  const b = r.pick(IDENTS);
  switch (r.int(0, 5)) {
    case 0: return `${n}:${indent}def ${a}_${b}(self, ${a}, ${b}=None):`;
    case 1: return `${n}:${indent}${a} = self.${b}.get("${a}", ${r.int(0, 999)})`;
    case 2: return `${n}:${indent}if ${a} is None or ${b} > ${r.int(1, 64)}:`;
    case 3: return `${n}:${indent}return ${a}.${b}(${r.int(0, 9)}) + len(${b})`;
    case 4: return `${n}:${indent}# ${sentence(r, r.int(4, 9))}`;
    default: return `${n}:${indent}raise ValueError(f"invalid ${a}: {${b}!r}")`;
  }
}

function toolOutput(r, tool) {
  const lines = [];
  if (tool === 'read_file') {
    const file = r.pick(FILES);
    const start = r.int(1, 400);
    const count = r.int(20, 100);
    lines.push(`[File: /testbed/${file} (${start + count + r.int(0, 300)} lines total)]`);
    for (let i = 0; i < count; i += 1) lines.push(codeLine(r, start + i));
  } else if (tool === 'run_tests') {
    const n = r.int(8, 50);
    lines.push('============================= test session starts ==============================');
    for (let i = 0; i < n; i += 1) lines.push(`tests/test_${r.pick(IDENTS)}.py::test_${r.pick(IDENTS)}_${r.pick(IDENTS)} ${r.chance(0.9) ? 'PASSED' : 'FAILED'} [${Math.round((i / n) * 100)}%]`);
    if (r.chance(0.5)) {
      lines.push('_________________________________ test_' + r.pick(IDENTS) + ' _________________________________');
      for (let i = 0; i < r.int(5, 20); i += 1) lines.push(codeLine(r, r.int(1, 500)));
      lines.push(`E       AssertionError: assert ${r.int(0, 999)} == ${r.int(0, 999)}`);
    }
    lines.push(`========================= ${n - 2} passed, 2 failed in ${r.int(1, 90)}.${r.int(10, 99)}s =========================`);
  } else if (tool === 'grep') {
    for (let i = 0; i < r.int(3, 25); i += 1) lines.push(`/testbed/${r.pick(FILES)}:${r.int(1, 900)}:${codeLine(r, '').slice(1)}`);
  } else {
    for (let i = 0; i < r.int(3, 30); i += 1) lines.push(`${r.pick(['drwxr-xr-x', '-rw-r--r--'])} 1 root root ${r.int(100, 99999)} Nov 22 ${r.pick(FILES)}`);
  }
  return lines.join('\n');
}

const TOOLS = ['read_file', 'run_tests', 'grep', 'bash'];

function systemPrompt(r) {
  const parts = ['You are an autonomous programmer working in a repository. Use the tools to inspect and edit files, run the tests, and finish when the issue is fixed.'];
  for (const tool of [...TOOLS, 'edit_file', 'submit']) {
    parts.push(`## ${tool}\n${sentence(r, 30)} ${sentence(r, 24)}\nArguments: path (string), ${r.pick(IDENTS)} (integer), ${r.pick(IDENTS)} (string).`);
  }
  return parts.join('\n\n');
}

/** One generated session as neutral turns, then written in a provider's shape. */
function turns(r, messages) {
  const out = [{ kind: 'user', text: `Fix the issue: ${sentence(r, 40)} ${sentence(r, 30)}` }];
  let call = 0;
  while (out.length < messages - 1) {
    const calls = [];
    const parallel = r.chance(0.2) ? 2 : 1;
    for (let i = 0; i < parallel; i += 1) {
      const tool = r.pick(TOOLS);
      calls.push({ id: `call_${(call += 1).toString(36).padStart(6, '0')}`, name: tool, input: { path: `/testbed/${r.pick(FILES)}`, [r.pick(IDENTS)]: r.int(1, 500) } });
    }
    out.push({ kind: 'assistant', text: [sentence(r, r.int(20, 60)), sentence(r, r.int(20, 60)), sentence(r, r.int(10, 50))].join(' '), calls });
    out.push({ kind: 'results', results: calls.map((c) => ({ id: c.id, text: toolOutput(r, c.name), isError: r.chance(0.05) })) });
    if (r.chance(0.05)) out.push({ kind: 'user', text: sentence(r, r.int(8, 30)) });
  }
  out.push({ kind: 'assistant', text: sentence(r, 20), calls: [] });
  return out;
}

function anthropicShape(list) {
  return list.map((t) => {
    if (t.kind === 'user') return { role: 'user', content: t.text };
    if (t.kind === 'assistant') {
      return {
        role: 'assistant',
        content: [{ type: 'text', text: t.text }, ...t.calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.input }))],
      };
    }
    return {
      role: 'user',
      content: t.results.map((res) => ({ type: 'tool_result', tool_use_id: res.id, content: res.text, ...(res.isError ? { is_error: true } : {}) })),
    };
  });
}

function openaiShape(list) {
  return list.flatMap((t) => {
    if (t.kind === 'user') return [{ role: 'user', content: t.text }];
    if (t.kind === 'assistant') {
      return [
        {
          role: 'assistant',
          content: t.text,
          ...(t.calls.length
            ? { tool_calls: t.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input) } })) }
            : {}),
        },
      ];
    }
    return t.results.map((res) => ({ role: 'tool', tool_call_id: res.id, content: res.text }));
  });
}

/**
 * A generated coding-agent session of about `messages` messages.
 * Returns `{ format, system?, messages }`: Anthropic sessions carry the system prompt at the top
 * level, OpenAI ones as the first message.
 */
export function generateSession(seed, messages, format) {
  const r = rng(seed);
  const system = systemPrompt(r);
  const list = turns(r, messages);
  if (format === 'anthropic') return { format, system, messages: anthropicShape(list) };
  return { format, messages: [{ role: 'system', content: system }, ...openaiShape(list)] };
}

/** The real SWE-agent sessions (OpenAI shape). */
export function realSessions(dataDir) {
  const dir = path.join(dataDir, 'swe-agent-trajectories');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.traj'))
    .sort()
    .map((f) => ({ name: f, format: 'openai', messages: JSON.parse(readFileSync(path.join(dir, f), 'utf8')).history }));
}

/** Every text a model reads in a provider message, and whether it is tool output. */
export function textsOf(message) {
  const out = [];
  const push = (text, tool) => typeof text === 'string' && text && out.push({ text, tool });
  const isTool = message.role === 'tool';
  if (typeof message.content === 'string') push(message.content, isTool);
  else if (Array.isArray(message.content)) {
    for (const part of message.content) {
      if (part.type === 'text') push(part.text, isTool);
      else if (part.type === 'tool_use') push(part.name + JSON.stringify(part.input), false);
      else if (part.type === 'tool_result') {
        if (typeof part.content === 'string') push(part.content, true);
        else for (const p of part.content ?? []) push(p.text, true);
      }
    }
  }
  for (const call of Array.isArray(message.tool_calls) ? message.tool_calls : []) push(call.function?.name + (call.function?.arguments ?? ''), false);
  return out;
}
