// Proxy benchmark (issue: drop-in proxy). Against the running API and a worker, measures:
// - the latency the proxy adds over calling the same upstream directly, in the same run and
//   interleaved request by request: whole non-streamed answers (p50, p99) and time to first byte
//   of streamed ones, for agents' sessions of about 200 messages (Anthropic Messages, OpenAI Chat Completions and
//   OpenAI Responses shapes);
// - how often consecutive forwarded requests share their prefix (what providers' prompt caches
//   need) over long real agent runs on a small window, with compactions running in the worker;
// - issue #19, side by side in the same run: the added latency of a session's first request with
//   100 messages next to a continuing session's, and the share of consecutive requests of a Claude
//   Code-shaped loop whose prefix is unchanged outside compaction boundaries.
// The upstream is a minimal in-process HTTP server answering at once, so every millisecond
// measured is the proxy's (or the client's, equally on both sides).
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fmt, fmtInt, median, percentile } from './lib/stats.mjs';
import { generateSession, realSessions } from './lib/workload.mjs';

const SESSIONS = 8;
const TURNS_PER_SESSION = 16;
const SESSION_MESSAGES = 200;
/** Issue #21: continuing sessions of these sizes, measured side by side, and how many rounds and turns. */
const LONG_SESSION_SIZES = [100, 1000];
const LONG_SESSION_ROUNDS = 3;
const LONG_SESSION_TURNS = 12;
/** Between two turns of one session (an agent runs its tools meanwhile); the answer is recorded then, off the request's path. */
const THINK_MS = 25;
const MODELS = { anthropic: 'claude-opus-4-5', openai: 'gpt-4o', responses: 'gpt-4o', codex: 'gpt-5.5' };
const PATHS = { anthropic: '/v1/messages', openai: '/v1/chat/completions', responses: '/v1/responses', codex: '/v1/responses' };
/** The proxy route of each shape (Responses goes to the OpenAI upstream). */
const PROXY_OF = { anthropic: 'anthropic', openai: 'openai', responses: 'openai', codex: 'openai' };
/** The shapes whose conversation is Responses `input` items: plain, and as Codex CLI 0.171 sends it. */
const ITEM_SHAPES = new Set(['responses', 'codex']);

/** Deterministic base64-looking text (encrypted reasoning stands in for what the client cannot read). */
function opaqueText(seed, chars) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  let x = seed * 2654435761 + 1;
  let out = 'gAAAAA';
  while (out.length < chars) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out += alphabet[x % 64];
  }
  return out;
}

/**
 * Codex CLI 0.171's request shape (captured against a loopback server): ~25 KB of developer items before the first user
 * message (permissions, base instructions, environment), eight function tools (~18,000 characters), reasoning with
 * `include: ["reasoning.encrypted_content"]`, `store: false`, no `max_output_tokens`, and a `reasoning` item with its
 * encrypted content before each answer's items, sent back on every later turn.
 */
const CODEX_DEVELOPER = [
  `<permissions instructions>${'Filesystem sandboxing defines which files can be read or written. '.repeat(40)}</permissions instructions>`,
  `You are Codex, a coding agent. ${'Follow the repository conventions, keep changes minimal, run the tests you touch, and report what changed. '.repeat(180)}`,
  `<environment_context>${'<cwd>/work/repo</cwd><shell>bash</shell> '.repeat(60)}</environment_context>`,
];
const CODEX_TOOLS = ['exec_command', 'write_stdin', 'request_user_input', 'view_image', 'get_goal', 'create_goal', 'update_goal', 'list_mcp_resources'].map((name, i) => ({
  type: 'function',
  name,
  description: `${name}: ${'Runs the requested operation in the workspace and returns its output with the exit code and wall time. '.repeat(20)}`,
  strict: false,
  parameters: { type: 'object', properties: { [`arg${i}`]: { type: 'string', description: 'The argument.' }, justification: { type: 'string' } }, required: [`arg${i}`], additionalProperties: false },
}));

function codexItems(messages, seed) {
  const items = CODEX_DEVELOPER.map((text) => ({ type: 'message', role: 'developer', content: [{ type: 'input_text', text }] }));
  let inAnswer = false;
  let turn = 0;
  for (const item of responsesItems(messages)) {
    // A reasoning item opens each answer (before its message or first call), as Codex sends the answer back.
    const answerItem = item.type === 'function_call' || (item.type === 'message' && item.role === 'assistant');
    if (answerItem && !inAnswer) items.push({ type: 'reasoning', summary: [], encrypted_content: opaqueText(seed * 1000 + turn++, 1_600) });
    inAnswer = answerItem;
    items.push(item);
  }
  return items;
}

/** A generated OpenAI-shaped session as Responses `input` items (what Codex sends): messages, function calls, their outputs. */
function responsesItems(messages) {
  const items = [];
  for (const m of messages) {
    const text = typeof m.content === 'string' ? m.content : Array.isArray(m.content) ? m.content.map((p) => p.text ?? '').join('') : '';
    if (m.role === 'tool') items.push({ type: 'function_call_output', call_id: m.tool_call_id, output: text });
    else if (m.role === 'assistant') {
      if (text) items.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] });
      for (const c of m.tool_calls ?? []) items.push({ type: 'function_call', call_id: c.id, name: c.function.name, arguments: c.function.arguments });
    } else items.push({ type: 'message', role: m.role === 'system' ? 'developer' : m.role, content: [{ type: 'input_text', text }] });
  }
  return items;
}

/** The upstream's Responses answer: one assistant message item (and function_call items). */
function responsesAnswer(n, model, answer, reasoning = false) {
  return {
    id: `resp_${n}`,
    object: 'response',
    status: 'completed',
    model,
    output: [
      ...(reasoning ? [{ id: `rs_${n}`, type: 'reasoning', summary: [], encrypted_content: opaqueText(n, 1_600) }] : []),
      ...(answer.text || answer.toolCalls.length === 0 ? [{ id: `msg_${n}`, type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: answer.text || '.', annotations: [] }] }] : []),
      ...answer.toolCalls.map((c, k) => ({ id: `fc_${n}_${k}`, type: 'function_call', status: 'completed', call_id: c.id, name: c.name, arguments: JSON.stringify(c.input) })),
    ],
    usage: { input_tokens: 100, output_tokens: 5, total_tokens: 105 },
  };
}
const PREFIX_WINDOW = 16_000;
const PREFIX_ROUNDS = 2;
/** New sessions whose first request (100 messages) is measured, and the turns of the Claude Code-shaped loop. */
const FIRST_REQUEST_SESSIONS = 20;
const FIRST_REQUEST_MESSAGES = 100;
const CLAUDE_LOOP_TURNS = 40;

/** The upstream: answers every completion at once; records what the proxy forwarded. */
function startUpstream() {
  const forwarded = [];
  let counter = 0;
  let respond = () => undefined;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      const n = (counter += 1);
      if (req.headers['x-bench-direct'] === undefined) forwarded.push(body);
      const answer = respond(body) ?? { text: `Noted (${n}).`, toolCalls: [] };
      const anthropic = req.url.startsWith('/v1/messages');
      const responses = req.url.startsWith('/v1/responses');
      if (responses) {
        const response = responsesAnswer(n, body.model, answer, Array.isArray(body.include) && body.include.includes('reasoning.encrypted_content'));
        if (!body.stream) {
          const payload = JSON.stringify(response);
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
          res.end(payload);
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        let seq = 0;
        const ev = (e) => `event: ${e.type}\ndata: ${JSON.stringify({ ...e, sequence_number: seq++ })}\n\n`;
        res.write(ev({ type: 'response.created', response: { ...response, status: 'in_progress', output: [], usage: undefined } }));
        response.output.forEach((item, i) => {
          const started = item.type === 'message' ? { content: [] } : item.type === 'function_call' ? { arguments: '' } : {};
          res.write(ev({ type: 'response.output_item.added', output_index: i, item: { ...item, status: 'in_progress', ...started } }));
          if (item.type === 'message') res.write(ev({ type: 'response.output_text.delta', item_id: item.id, output_index: i, content_index: 0, delta: item.content[0].text }));
          else if (item.type === 'function_call') res.write(ev({ type: 'response.function_call_arguments.delta', item_id: item.id, output_index: i, delta: item.arguments }));
          res.write(ev({ type: 'response.output_item.done', output_index: i, item }));
        });
        res.end(ev({ type: 'response.completed', response }));
        return;
      }
      if (!body.stream) {
        const payload = JSON.stringify(
          anthropic
            ? {
                id: `msg_${n}`,
                type: 'message',
                role: 'assistant',
                model: body.model,
                content: [
                  ...(answer.text ? [{ type: 'text', text: answer.text }] : []),
                  ...answer.toolCalls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.input })),
                ],
                stop_reason: answer.toolCalls.length ? 'tool_use' : 'end_turn',
                usage: { input_tokens: 100, output_tokens: 5 },
              }
            : {
                id: `chatcmpl-${n}`,
                object: 'chat.completion',
                model: body.model,
                choices: [
                  {
                    index: 0,
                    message: {
                      role: 'assistant',
                      content: answer.text || null,
                      ...(answer.toolCalls.length ? { tool_calls: answer.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input) } })) } : {}),
                    },
                    finish_reason: answer.toolCalls.length ? 'tool_calls' : 'stop',
                  },
                ],
                usage: { prompt_tokens: 100, completion_tokens: 5, total_tokens: 105 },
              },
        );
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
        res.end(payload);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      if (anthropic) {
        const ev = (e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;
        res.write(ev({ type: 'message_start', message: { id: `msg_${n}`, type: 'message', role: 'assistant', model: body.model, content: [], usage: { input_tokens: 100, output_tokens: 1 } } }));
        res.write(ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
        res.write(ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: answer.text || '.' } }));
        res.write(ev({ type: 'content_block_stop', index: 0 }));
        res.write(ev({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 5 } }));
        res.end(ev({ type: 'message_stop' }));
      } else {
        const ch = (choices) => `data: ${JSON.stringify({ id: `chatcmpl-${n}`, object: 'chat.completion.chunk', model: body.model, choices })}\n\n`;
        res.write(ch([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]));
        res.write(ch([{ index: 0, delta: { content: answer.text || '.' }, finish_reason: null }]));
        res.write(ch([{ index: 0, delta: {}, finish_reason: 'stop' }]));
        res.end('data: [DONE]\n\n');
      }
    });
  });
  server.keepAliveTimeout = 30_000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}`,
        forwarded,
        respondWith: (fn) => {
          respond = fn;
        },
        close: () => new Promise((r) => server.close(() => r())),
      }),
    ),
  );
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

/** One POST; resolves with the time to the first body byte, the whole time, the status, headers and body. */
function post(url, headers, body) {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(JSON.stringify(body));
    const started = performance.now();
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': payload.length, ...headers } }, (res) => {
      let firstByte;
      const chunks = [];
      res.on('data', (c) => {
        firstByte ??= performance.now() - started;
        chunks.push(c);
      });
      res.on('end', () => resolve({ ttfb: firstByte ?? performance.now() - started, total: performance.now() - started, status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The assistant message a client appends from an answer it received (JSON or streamed); for Responses, the output items. */
function answerMessage(format, result, stream) {
  if (ITEM_SHAPES.has(format)) {
    if (!stream) return JSON.parse(result.text).output;
    for (const line of result.text.split('\n')) {
      if (!line.startsWith('data: ')) continue;
      const e = JSON.parse(line.slice(6));
      if (e.type === 'response.completed') return e.response.output;
    }
    return [];
  }
  if (!stream) {
    const body = JSON.parse(result.text);
    return format === 'anthropic' ? { role: 'assistant', content: body.content } : body.choices[0].message;
  }
  let text = '';
  for (const line of result.text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const e = JSON.parse(line.slice(6));
    if (format === 'anthropic' && e.type === 'content_block_delta') text += e.delta.text;
    if (format === 'openai' && e.choices?.[0]?.delta?.content) text += e.choices[0].delta.content;
  }
  return format === 'anthropic' ? { role: 'assistant', content: [{ type: 'text', text }] } : { role: 'assistant', content: text };
}

export async function run({ apiUrl, key, databaseUrl, machine, root, log }) {
  const loadAtStart = os.loadavg()[0];
  const upstream = await startUpstream();
  const { default: pg } = await import('pg');
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  // The default tenant (COMPACTOR_INIT_API_KEY's) sends its proxied requests to this upstream.
  await db.query(`UPDATE tenants SET settings = $1::jsonb WHERE name = 'default'`, [
    JSON.stringify({ proxy: { anthropicBaseUrl: upstream.url, openaiBaseUrl: upstream.url } }),
  ]);
  await db.end();
  const proxyUrl = (format) => `${apiUrl}/v1/proxy/${PROXY_OF[format]}${PATHS[format]}`;
  const directUrl = (format) => `${upstream.url}${PATHS[format]}`;
  const providerHeaders = (format) => (format === 'anthropic' ? { 'x-api-key': 'sk-ant-bench', 'anthropic-version': '2023-06-01' } : { authorization: 'Bearer sk-bench' });

  if (process.env.BENCH_PROXY_LONG_ONLY) {
    // Only the continuing sessions of 100 and 1,000 messages (an experiment: run with --no-write, the section is partial).
    const long = await longSessionLatency({ key, proxyUrl, directUrl, providerHeaders, log });
    await upstream.close();
    return longSessionSection(long).join('\n');
  }

  const samples = {};
  const record = (name, proxy, direct, work) => {
    samples[name] ??= { proxy: [], direct: [], diff: [], work: [] };
    samples[name].proxy.push(proxy);
    samples[name].direct.push(direct);
    samples[name].diff.push(proxy - direct);
    samples[name].work.push(work);
  };
  const workOf = (res) => Number(/compactor;dur=([\d.]+)/.exec(String(res.headers['server-timing'] ?? ''))?.[1] ?? NaN);
  /** The proxy's stages (Server-Timing), all measured requests together, and per provider shape. */
  const stages = {};
  const stagesOf = { anthropic: {}, openai: {}, responses: {}, codex: {} };
  const keepStages = (format, res) => {
    for (const [, name, dur] of String(res.headers['server-timing'] ?? '').matchAll(/(\w+);dur=([\d.]+)/g)) {
      (stages[name] ??= []).push(Number(dur));
      (stagesOf[format][name] ??= []).push(Number(dur));
    }
  };
  /** Messages sent per request (Responses: input items, counted apart). */
  let sizes = { min: Infinity, max: 0 };
  let itemSizes = { min: Infinity, max: 0 };

  let codexSizes = { min: Infinity, max: 0 };

  // Round by round, one session of each shape in turn: load that comes and goes on this shared machine falls on every
  // shape alike, so the rows compare side by side.
  for (let s = 0; s < SESSIONS + 1; s += 1) {
    for (const format of ['anthropic', 'openai', 'responses', 'codex']) {
      const warm = s === 0;
      // Responses sessions are the OpenAI ones (other seeds) as input items.
      const session = generateSession(7000 + s + { anthropic: 0, openai: 100, responses: 200, codex: 300 }[format], SESSION_MESSAGES, format === 'anthropic' ? 'anthropic' : 'openai');
      const sessionId = `bench-proxy-${format}-${s}-${randomUUID().slice(0, 8)}`;
      const headers = { ...providerHeaders(format), 'x-compactor-key': key, 'x-compactor-session': sessionId };
      const messages = format === 'responses' ? responsesItems(session.messages) : format === 'codex' ? codexItems(session.messages, s) : [...session.messages];
      const codexFields = { tools: CODEX_TOOLS, tool_choice: 'auto', parallel_tool_calls: false, reasoning: { effort: 'medium', summary: 'auto' }, store: false, include: ['reasoning.encrypted_content'], prompt_cache_key: sessionId };
      const body = (stream) =>
        format === 'responses'
          ? { model: MODELS[format], max_output_tokens: 1024, input: messages, store: false, ...(stream ? { stream: true } : {}) }
          : format === 'codex'
            ? { model: MODELS[format], ...(stream ? { stream: true } : {}), input: messages, ...codexFields }
            : { model: MODELS[format], max_tokens: 1024, ...(session.system ? { system: session.system } : {}), messages, ...(stream ? { stream: true } : {}) };
      const append = (answer) => (Array.isArray(answer) ? messages.push(...answer) : messages.push(answer));
      // The session's first request stores its 200 messages (not measured: an agent pays it once).
      messages.push({ role: 'user', content: 'Continue with the next step.' });
      const first = await post(proxyUrl(format), headers, body(false));
      if (first.status !== 200) throw new Error(`proxy ${format}: ${first.status} ${first.text.slice(0, 300)}`);
      append(answerMessage(format, first, false));
      for (let t = 0; t < TURNS_PER_SESSION; t += 1) {
        const stream = t % 2 === 1;
        messages.push({ role: 'user', content: `Step ${t}: ${'check the next failing test and report. '.repeat(3)}` });
        if (format === 'responses') itemSizes = { min: Math.min(itemSizes.min, messages.length), max: Math.max(itemSizes.max, messages.length) };
        else if (format === 'codex') codexSizes = { min: Math.min(codexSizes.min, messages.length), max: Math.max(codexSizes.max, messages.length) };
        else sizes = { min: Math.min(sizes.min, messages.length), max: Math.max(sizes.max, messages.length) };
        const payload = body(stream);
        // Interleaved, direct first and proxy first in turn, so drift on this noisy machine hits both alike.
        const viaProxy = () => post(proxyUrl(format), headers, payload);
        const direct = () => post(directUrl(format), { ...providerHeaders(format), 'x-bench-direct': '1' }, payload);
        let d;
        let p;
        if (t % 4 < 2) {
          d = await direct();
          p = await viaProxy();
        } else {
          p = await viaProxy();
          d = await direct();
        }
        if (p.status !== 200) throw new Error(`proxy ${format}: ${p.status} ${p.text.slice(0, 300)}`);
        if (!warm) {
          record(`${format} ${stream ? 'streamed: time to first byte' : 'non-streamed: whole answer'}`, stream ? p.ttfb : p.total, stream ? d.ttfb : d.total, workOf(p));
          keepStages(format, p);
        }
        append(answerMessage(format, p, stream));
        await sleep(THINK_MS);
      }
    }
  }

  const rows = Object.entries(samples).map(([name, x]) => {
    const p50 = median(x.proxy) - median(x.direct);
    const p99 = percentile(x.proxy, 99) - percentile(x.direct, 99);
    return { name, n: x.proxy.length, direct50: median(x.direct), proxy50: median(x.proxy), added50: p50, diff50: median(x.diff), work50: median(x.work), direct99: percentile(x.direct, 99), proxy99: percentile(x.proxy, 99), added99: p99 };
  });
  for (const r of rows) log(`${r.name}: +${fmt(r.added50)} ms p50, +${fmt(r.added99)} ms p99, proxy work ${fmt(r.work50)} ms p50 (n=${r.n})`);
  for (const [format, byName] of Object.entries(stagesOf)) log(`${format} stages p50: ${Object.entries(byName).map(([name, v]) => `${name} ${fmt(median(v))}`).join(', ')}`);

  // Prefix sharing: the real SWE-agent runs replayed as one long agent run on a small window.
  const prefix = await prefixSharing({ apiUrl, key, root, upstream, log });
  // Prompt caching on a Claude Code-shaped loop, and a session's first request with 100 messages.
  const claudeLoop = await claudeCodeShapedLoop({ apiUrl, key, databaseUrl, upstream, log });
  const firstRequest = await firstRequestLatency({ key, proxyUrl, directUrl, providerHeaders, log });
  const long = await longSessionLatency({ key, proxyUrl, directUrl, providerHeaders, log });
  await upstream.close();

  const target = 10;
  const met = rows.filter((r) => r.name.includes('non-streamed')).every((r) => r.added50 <= target);
  const lines = [
    '## Proxy overhead and prompt-cache prefix sharing (`npm run bench -- proxy`)',
    '',
    `Machine: ${machine}; 1-minute load average ${fmt(loadAtStart, 2)} when the run started (other work on this shared machine moves`,
    'these numbers). The API and a worker against PostgreSQL and Redis here; the upstream is an in-process HTTP',
    'server that answers at once, called directly and through the proxy in the same run, request by request in turn.',
    `Each session holds ${SESSION_MESSAGES} generated coding-agent messages (tool output ≈ 80% of the tokens) when measuring starts and grows`,
    `by its turns (${sizes.min}–${sizes.max} messages sent per request; a Responses session is an OpenAI one as ${itemSizes.min}–${itemSizes.max} \`input\` items,`,
    `a Codex-shaped one (\`codex\` rows: Codex CLI 0.171's request shape on gpt-5.5, ~25 KB of developer items, eight tool schemas, a 1,600-character`,
    `encrypted \`reasoning\` item before each answer, \`store: false\`, no \`max_output_tokens\`) ${codexSizes.min}–${codexSizes.max} items);`,
    `${SESSIONS} sessions per provider shape (one of each shape in turn), ${TURNS_PER_SESSION} turns each,`,
    `${THINK_MS} ms between turns as an agent's tool run (the answer is recorded then, after the response).`,
    '',
    '| request | n | direct p50 | proxy p50 | added p50 | median of per-request differences | proxy work before forwarding (Server-Timing) p50 | direct p99 | proxy p99 | added p99 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) => `| ${r.name} | ${r.n} | ${fmt(r.direct50)} ms | ${fmt(r.proxy50)} ms | **${fmt(r.added50)} ms** | ${fmt(r.diff50)} ms | ${fmt(r.work50)} ms | ${fmt(r.direct99)} ms | ${fmt(r.proxy99)} ms | ${fmt(r.added99)} ms |`,
    ),
    '',
    `Target: ≤ ${target} ms added at p50 for a 200-message session: **${met ? 'met' : 'missed'}** (non-streamed).`,
    ...ratios(rows),
    `The proxy's own work before forwarding, by stage (Server-Timing, p50 over all measured requests): ${Object.entries(stages)
      .filter(([name]) => name !== 'compactor')
      .map(([name, v]) => `${name} ${fmt(median(v))} ms`)
      .join(', ')}; in all ${fmt(median(stages.compactor ?? []))} ms.`,
    `By shape (p50, ms): ${Object.entries(stagesOf)
      .map(([format, byName]) => `${format}: ${Object.entries(byName).filter(([name]) => name !== 'compactor').map(([name, v]) => `${name} ${fmt(median(v))}`).join(', ')}; in all ${fmt(median(byName.compactor ?? []))}`)
      .join(' — ')}.`,
    '`read`: the body\'s JSON without its messages, whose byte ranges are found in one pass (a Responses request\'s `input` items',
    'are parsed one by one, except those whose bytes are unchanged since the conversation\'s previous request); `auth`: the Compactor key (one',
    'query, overlapping `read`); `compare`: keys of the messages whose bytes changed since the conversation\'s previous request',
    '(the rest are recognised by their unchanged bytes); `history`: the session row, the stored history\'s keys (cached per',
    'process), the block-by-block comparison and the check of the new messages, whose append then runs while the request is',
    'forwarded; `context`: the context (cached per process, new rows fetched) fitted to the budget; `body`: the forwarded body,',
    'copied from each context message\'s JSON (kept as bytes while the message stays in the context) and the request\'s own bytes',
    'outside its conversation. The rest of the added time is the extra HTTP hop with a body of a few hundred kilobytes each way (the',
    'client to the proxy, the proxy to the upstream) and the scheduling of four processes (client, API, worker, PostgreSQL) on',
    'this machine\'s cores. The time to first byte of a streamed answer adds the same: everything happens before the request',
    'goes upstream, and the stream is piped byte for byte.',
    '',
    prefix.markdown,
    '',
    ...sideBySide(rows, firstRequest, claudeLoop),
    '',
    ...longSessionSection(long),
  ];
  return lines.join('\n');
}

/** The Responses rows against the Chat Completions and Anthropic rows of the same run (issue #17: the same targets). */
function ratios(rows) {
  const row = (name) => rows.find((r) => r.name === name);
  const out = [];
  for (const [shape, kind] of ['responses', 'codex'].flatMap((shape) => ['non-streamed: whole answer', 'streamed: time to first byte'].map((kind) => [shape, kind]))) {
    const responses = row(`${shape} ${kind}`);
    const openai = row(`openai ${kind}`);
    const anthropic = row(`anthropic ${kind}`);
    if (!responses || !openai || !anthropic) continue;
    const ratio = (a, b) => `${fmt(a / b, 2)}×`;
    out.push(
      `${shape === 'codex' ? 'Responses, Codex-shaped' : 'Responses'}, ${kind}, side by side in this run: added p50 ${fmt(responses.added50)} ms, ${ratio(responses.added50, openai.added50)} Chat Completions' ${fmt(openai.added50)} ms and ${ratio(responses.added50, anthropic.added50)} Anthropic's ${fmt(anthropic.added50)} ms; proxy work ${fmt(responses.work50)} ms, ${ratio(responses.work50, openai.work50)} and ${ratio(responses.work50, anthropic.work50)}.`,
    );
  }
  return out;
}

/** The three issue #19 targets in one table: a first request of 100 messages, a continuing session, prompt-cache prefix reuse. */
function longSessionSection(long) {
  const [short, longest] = long;
  const gap = longest.added50 - short.added50;
  return [
    '### Continuing sessions of 100 and 1,000 messages (issue #21, same run)',
    '',
    `Anthropic-shaped generated coding-agent sessions with every text cut to 300 characters, so that 1,000 messages fit the model's window and the whole history is forwarded each turn (a fitted or compacted context would end the run); ${LONG_SESSION_ROUNDS} sessions of each size, one of each in turn, ${LONG_SESSION_TURNS} non-streamed turns each, direct and through the proxy in turn.`,
    '',
    '| session | n | request body | direct p50 | proxy p50 | added p50 | proxy work before forwarding p50 | by stage (p50, ms) |',
    '|---|---:|---:|---:|---:|---:|---:|---|',
    ...long.map((r) => `| ${fmtInt(r.size)} messages | ${r.n} | ${fmt(r.bytes / 1024, 0)} KB | ${fmt(r.direct50)} ms | ${fmt(r.proxy50)} ms | **${fmt(r.added50)} ms** | ${fmt(r.work50)} ms | ${r.stages} |`),
    '',
    `Target: the 1,000-message session's added p50 within 2 ms of the 100-message session's: ${fmt(gap)} ms, **${gap <= 2 ? 'met' : 'missed'}**.`,
  ];
}

function sideBySide(rows, first, loop) {
  const continuing = rows.find((r) => r.name === 'anthropic non-streamed: whole answer');
  const openaiContinuing = rows.find((r) => r.name === 'openai non-streamed: whole answer');
  const responsesContinuing = rows.find((r) => r.name === 'responses non-streamed: whole answer');
  const codexContinuing = rows.find((r) => r.name === 'codex non-streamed: whole answer');
  const verdict = (ok) => (ok ? 'met' : '**missed**');
  return [
    '### Issue #19 targets, side by side (same run)',
    '',
    '| measure | n | result | target | |',
    '|---|---:|---:|---:|---|',
    `| added latency, a session's first request with 100 messages (anthropic shape, non-streamed, p50) | ${first.n} | ${fmt(first.added50)} ms (direct ${fmt(first.direct50)} ms, proxy ${fmt(first.proxy50)} ms; proxy work ${fmt(first.work50)} ms: ${first.stages}) | < 15 ms | ${verdict(first.added50 < 15)} |`,
    `| added latency, a continuing session (anthropic shape, non-streamed, p50) | ${continuing?.n ?? 0} | ${fmt(continuing?.added50 ?? NaN)} ms | ≤ 10 ms | ${verdict((continuing?.added50 ?? Infinity) <= 10)} |`,
    `| added latency, a continuing session (openai shape, non-streamed, p50) | ${openaiContinuing?.n ?? 0} | ${fmt(openaiContinuing?.added50 ?? NaN)} ms | ≤ 10 ms | ${verdict((openaiContinuing?.added50 ?? Infinity) <= 10)} |`,
    `| added latency, a continuing session (OpenAI Responses shape, non-streamed, p50; issue #17) | ${responsesContinuing?.n ?? 0} | ${fmt(responsesContinuing?.added50 ?? NaN)} ms | ≤ 10 ms | ${verdict((responsesContinuing?.added50 ?? Infinity) <= 10)} |`,
    `| added latency, a continuing session (Codex CLI-shaped Responses requests, non-streamed, p50; issue #17) | ${codexContinuing?.n ?? 0} | ${fmt(codexContinuing?.added50 ?? NaN)} ms | ≤ 10 ms | ${verdict((codexContinuing?.added50 ?? Infinity) <= 10)} |`,
    `| consecutive forwarded requests of a Claude Code-shaped loop whose prefix is unchanged, outside compaction boundaries | ${loop.samePairs} | ${fmt(loop.share * 100)}% | ≥ 95% | ${verdict(loop.share >= 0.95)} |`,
    '',
    loop.markdown,
  ];
}

const sessionsPath = (apiUrl) => `${apiUrl}/v1/sessions`;

/** The first request of new sessions holding 100 messages, through the proxy and directly, interleaved. */
/** Every text of a generated Anthropic message cut to `max` characters: many messages that still fit a window. */
function shortened(message, max) {
  const cut = (text) => (typeof text === 'string' && text.length > max ? text.slice(0, max) : text);
  if (typeof message.content === 'string') return { ...message, content: cut(message.content) };
  return {
    ...message,
    content: message.content.map((block) =>
      block.type === 'text' ? { ...block, text: cut(block.text) } : block.type === 'tool_result' && typeof block.content === 'string' ? { ...block, content: cut(block.content) } : block,
    ),
  };
}

/**
 * Issue #21 item 4: continuing sessions of 100 and of 1,000 messages, the same shape (generated Anthropic-shaped
 * coding-agent turns, every text cut to 300 characters so 1,000 messages stay within the model's window and the whole
 * history is forwarded), measured in turn round by round. What the proxy does per turn should follow what was
 * appended, not the session's length.
 */
async function longSessionLatency({ key, proxyUrl, directUrl, providerHeaders, log }) {
  const format = 'anthropic';
  const out = {};
  for (const size of LONG_SESSION_SIZES) out[size] = { proxy: [], direct: [], work: [], bytes: 0, stages: {} };
  for (let round = 0; round < LONG_SESSION_ROUNDS + 1; round += 1) {
    for (const size of round % 2 ? [...LONG_SESSION_SIZES].reverse() : LONG_SESSION_SIZES) {
      const session = generateSession(9500 + round * 10 + size, size - 1, format);
      const messages = session.messages.map((m) => shortened(m, 300));
      const headers = { ...providerHeaders(format), 'x-compactor-key': key, 'x-compactor-session': `bench-long-${size}-${round}-${randomUUID().slice(0, 8)}` };
      const body = () => ({ model: MODELS[format], max_tokens: 1024, ...(session.system ? { system: session.system } : {}), messages });
      messages.push({ role: 'user', content: 'Continue with the next step.' });
      // The first request stores the history (not measured: an agent pays it once).
      const first = await post(proxyUrl(format), headers, body());
      if (first.status !== 200) throw new Error(`long session ${size}: ${first.status} ${first.text.slice(0, 300)}`);
      messages.push(answerMessage(format, first, false));
      for (let t = 0; t < LONG_SESSION_TURNS; t += 1) {
        messages.push({ role: 'user', content: `Step ${t}: check the next failing test and report.` });
        const payload = body();
        let p;
        let d;
        if (t % 2 === 0) {
          d = await post(directUrl(format), { ...providerHeaders(format), 'x-bench-direct': '1' }, payload);
          p = await post(proxyUrl(format), headers, payload);
        } else {
          p = await post(proxyUrl(format), headers, payload);
          d = await post(directUrl(format), { ...providerHeaders(format), 'x-bench-direct': '1' }, payload);
        }
        if (p.status !== 200) throw new Error(`long session ${size}: ${p.status} ${p.text.slice(0, 300)}`);
        if (p.headers['x-compactor-fallback'] || Number(p.headers['x-compactor-context-version'] ?? 0) > 0) throw new Error(`long session ${size}: the context was fitted or compacted, so it is not the whole history`);
        if (round > 0) {
          out[size].proxy.push(p.total);
          out[size].direct.push(d.total);
          const timing = String(p.headers['server-timing'] ?? '');
          out[size].work.push(Number(/compactor;dur=([\d.]+)/.exec(timing)?.[1] ?? NaN));
          for (const [, name, dur] of timing.matchAll(/(?:^|, )([a-z]+);dur=([\d.]+)/g)) if (name !== 'compactor') (out[size].stages[name] ??= []).push(Number(dur));
          out[size].bytes = Buffer.byteLength(JSON.stringify(payload));
        }
        messages.push(answerMessage(format, p, false));
        await sleep(THINK_MS);
      }
    }
  }
  const rows = LONG_SESSION_SIZES.map((size) => {
    const x = out[size];
    const stages = Object.entries(x.stages).map(([name, values]) => `${name} ${fmt(median(values))}`).join(', ');
    return { size, n: x.proxy.length, direct50: median(x.direct), proxy50: median(x.proxy), added50: median(x.proxy) - median(x.direct), work50: median(x.work), bytes: x.bytes, stages };
  });
  for (const r of rows) log(`continuing session of ${r.size} messages: +${fmt(r.added50)} ms p50 (proxy work ${fmt(r.work50)} ms: ${r.stages}; n=${r.n})`);
  return rows;
}

async function firstRequestLatency({ key, proxyUrl, directUrl, providerHeaders, log }) {
  const format = 'anthropic';
  const proxy = [];
  const direct = [];
  const work = [];
  /** Server-Timing stages of the proxy's work before forwarding, ms per request. */
  const stages = {};
  for (let s = 0; s < FIRST_REQUEST_SESSIONS + 1; s += 1) {
    const session = generateSession(9000 + s, FIRST_REQUEST_MESSAGES - 1, format);
    // As in the continuing sessions above: the generated history, then the new user turn.
    const body = { model: MODELS[format], max_tokens: 1024, ...(session.system ? { system: session.system } : {}), messages: [...session.messages, { role: 'user', content: 'Continue with the next step.' }] };
    const headers = { ...providerHeaders(format), 'x-compactor-key': key, 'x-compactor-session': `bench-first-${s}-${randomUUID().slice(0, 8)}` };
    const viaProxy = () => post(proxyUrl(format), headers, body);
    const straight = () => post(directUrl(format), { ...providerHeaders(format), 'x-bench-direct': '1' }, body);
    let p;
    let d;
    if (s % 2 === 0) {
      d = await straight();
      p = await viaProxy();
    } else {
      p = await viaProxy();
      d = await straight();
    }
    if (p.status !== 200) throw new Error(`first request: ${p.status} ${p.text.slice(0, 300)}`);
    if (s === 0) continue; // warm-up
    proxy.push(p.total);
    direct.push(d.total);
    const timing = String(p.headers['server-timing'] ?? '');
    work.push(Number(/compactor;dur=([\d.]+)/.exec(timing)?.[1] ?? NaN));
    for (const [, name, dur] of timing.matchAll(/(?:^|, )([a-z]+);dur=([\d.]+)/g)) if (name !== 'compactor') (stages[name] ??= []).push(Number(dur));
    await sleep(THINK_MS);
  }
  const byStage = Object.entries(stages).map(([name, values]) => `${name} ${fmt(median(values))}`).join(', ');
  const out = { n: proxy.length, proxy50: median(proxy), direct50: median(direct), added50: median(proxy) - median(direct), work50: median(work), stages: byStage };
  log(`first request of 100 messages: +${fmt(out.added50)} ms p50 (proxy work ${fmt(out.work50)} ms: ${byStage}; n=${out.n})`);
  return out;
}

/** Claude Code's request shape (2.1.332, as captured against a loopback upstream): see claudeCodeShapedLoop. */
function claudeCodeTools() {
  const names = ['Agent', 'Bash', 'Edit', 'ListAgents', 'Read', 'ReportFindings', 'ScheduleWakeup', 'Skill', 'ToolSearch', 'Workflow', 'DeferredToolPlaceholder', 'Write'];
  // ~31,000 characters of schemas in all, as the CLI sends.
  return names.map((name, i) => ({
    name,
    description: `${name}: ${'Describes when and how to use this tool, its limits and its output format. '.repeat(30)}`.slice(0, 2_300),
    input_schema: { type: 'object', properties: { [`arg${i}`]: { type: 'string', description: 'The argument.' }, description: { type: 'string' } }, required: [`arg${i}`] },
  }));
}

/**
 * A loop shaped like Claude Code's requests (model claude-opus-5-5, max_tokens 128,000, 12 tool schemas, a system
 * array with a cache marker, a role "system" message after the first user message, a cache marker moving to the
 * last message every turn, Bash/Read calls with large outputs) through the proxy on a balanced session whose window
 * leaves ~35,000 tokens of budget, with the worker compacting; the loop waits for the worker between turns as a model's
 * thinking time would. Counts consecutive forwarded pairs whose prefix (system, tools and messages, cache markers aside)
 * is unchanged, among the pairs with no compaction applied between them.
 */
async function claudeCodeShapedLoop({ apiUrl, key, databaseUrl, upstream, log }) {
  const { default: pg } = await import('pg');
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const sessionId = `bench-cc-${randomUUID().slice(0, 8)}`;
  const maxTokens = 128_000;
  const create = await fetch(sessionsPath(apiUrl), {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id: sessionId, model: 'claude-opus-5-5', contextWindow: maxTokens + 45_000, policy: 'balanced' }),
  });
  if (create.status !== 201) throw new Error(`create session: ${create.status} ${await create.text()}`);
  const tools = claudeCodeTools();
  const system = [
    { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.332; cc_entrypoint=sdk-cli;' },
    { type: 'text', text: "You are a Claude agent, built on Anthropic's Claude Agent SDK.", cache_control: { type: 'ephemeral' } },
    { type: 'text', text: `${'You are an agent working with the user toward their goals. '.repeat(120)}`, cache_control: { type: 'ephemeral' } },
  ];
  const messages = [
    { role: 'user', content: [{ type: 'text', text: '<system-reminder>Attribution guidance.</system-reminder>' }, { type: 'text', text: 'Read every part in data/ and report whether the totals match.' }] },
    { role: 'system', content: `# Environment\n${'You have been invoked in the following environment. '.repeat(150)}` },
  ];
  const withMarker = (list) =>
    list.map((m, i) =>
      i === list.length - 1 && Array.isArray(m.content) ? { ...m, content: m.content.map((b, j) => (j === m.content.length - 1 ? { ...b, cache_control: { type: 'ephemeral' } } : b)) } : m,
    );
  const headers = { 'x-api-key': 'sk-ant-bench', 'anthropic-version': '2023-06-01', 'x-compactor-key': key, 'x-compactor-session': sessionId };
  const turns = [];
  for (let k = 0; k <= CLAUDE_LOOP_TURNS; k += 1) {
    const id = `toolu_bench_${k}`;
    const final = k === CLAUDE_LOOP_TURNS;
    upstream.respondWith(() => (final ? { text: 'All parts read.', toolCalls: [] } : { text: '', toolCalls: [{ id, name: k % 2 ? 'Read' : 'Bash', input: k % 2 ? { file_path: `/work/data/part-${k}.txt` } : { command: `cat data/part-${k}.txt` } }] }));
    const before = upstream.forwarded.length;
    const res = await post(`${apiUrl}/v1/proxy/anthropic/v1/messages?beta=true`, headers, { model: 'claude-opus-5-5', max_tokens: maxTokens, system, tools, messages: withMarker(messages), stream: false });
    if (res.status !== 200) throw new Error(`Claude Code-shaped loop: ${res.status} ${res.text.slice(0, 300)}`);
    turns.push({ body: upstream.forwarded[before], version: Number(res.headers['x-compactor-context-version']), fallback: res.headers['x-compactor-fallback'] === 'applied' });
    if (final) break;
    const answer = JSON.parse(res.text);
    messages.push({ role: 'assistant', content: answer.content });
    const output = Array.from({ length: 70 }, (_, i) => `part ${k} line ${i}: ${'alpha bravo charlie delta '.repeat(2)}value=${(i * 7919 + k) % 10007}`).join('\n');
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: output }] });
    // The worker catches up while the agent runs its tool (a model's thinking time in a real loop).
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const { rows } = await db.query(
        `SELECT count(*)::int AS n FROM compaction_jobs j JOIN sessions s ON s.id = j.session_id WHERE s.external_id = $1 AND j.status IN ('queued', 'running')`,
        [sessionId],
      );
      if (rows[0].n === 0) break;
      await sleep(20);
    }
  }
  upstream.respondWith(() => undefined);
  await db.end();
  const strip = (value) => JSON.parse(JSON.stringify(value, (k, v) => (k === 'cache_control' ? undefined : v)));
  let samePairs = 0;
  let shared = 0;
  let compactionPairs = 0;
  let fallbackPairs = 0;
  for (let i = 1; i < turns.length; i += 1) {
    const [a, b] = [turns[i - 1], turns[i]];
    if (a.version !== b.version) {
      compactionPairs += 1;
      continue;
    }
    samePairs += 1;
    if (a.fallback || b.fallback) fallbackPairs += 1;
    const [x, y] = [strip(a.body), strip(b.body)];
    const same = JSON.stringify(x.system) === JSON.stringify(y.system) && JSON.stringify(x.tools) === JSON.stringify(y.tools) && x.messages.length <= y.messages.length && x.messages.every((m, j) => JSON.stringify(m) === JSON.stringify(y.messages[j]));
    if (same) shared += 1;
  }
  const share = samePairs > 0 ? shared / samePairs : 0;
  log(`Claude Code-shaped loop: ${shared}/${samePairs} same-version pairs share the prefix; ${compactionPairs} compaction boundaries`);
  const markdown = [
    '### Prompt caching on a Claude Code-shaped loop',
    '',
    `${turns.length} requests shaped like Claude Code 2.1.332's (model \`claude-opus-5-5\`, \`max_tokens\` 128,000, 12 tool schemas of`,
    `${fmtInt(JSON.stringify(tools).length)} characters, a system array with cache markers, a \`role: "system"\` message after the first user message,`,
    'the cache marker moving to the last message every turn, Bash/Read results of ~6,000 characters) through the proxy on a balanced',
    'session with a window of max_tokens + 45,000; the loop waits for the worker between turns. A pair shares its prefix when system,',
    'tools and every message of the earlier forwarded request (cache markers aside) are the start of the later one.',
    '',
    '| consecutive pairs | with a compaction applied between them | without | of those, prefix unchanged | of those, the fallback acted |',
    '|---:|---:|---:|---:|---:|',
    `| ${turns.length - 1} | ${compactionPairs} | ${samePairs} | ${shared} (${fmt(share * 100)}%) | ${fallbackPairs} |`,
  ].join('\n');
  return { share, samePairs, shared, compactionPairs, fallbackPairs, markdown };
}

/** Replays the real SWE-agent runs through the proxy on a small window and counts consecutive forwarded requests with a shared prefix. */
async function prefixSharing({ apiUrl, key, root, upstream, log }) {
  const runs = realSessions(path.join(root, 'testdata')).map((s) => s.messages);
  const conversation = [];
  for (let r = 0; r < PREFIX_ROUNDS; r += 1) {
    runs.forEach((run, i) => {
      for (const m of run) {
        if (m.role === 'system' && (r > 0 || i > 0)) continue;
        conversation.push({
          ...m,
          ...(m.tool_calls ? { tool_calls: m.tool_calls.map((c) => ({ ...c, id: `${c.id}_r${r}` })) } : {}),
          ...(m.tool_call_ids ? { tool_call_ids: m.tool_call_ids.map((id) => `${id}_r${r}`) } : {}),
        });
      }
    });
  }
  const sessionId = `bench-prefix-${randomUUID().slice(0, 8)}`;
  const create = await fetch(`${apiUrl}/v1/sessions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id: sessionId, model: 'gpt-4o', contextWindow: PREFIX_WINDOW, outputReserve: 1_000, policy: 'balanced' }),
  });
  if (create.status !== 201) throw new Error(`create session: ${create.status} ${await create.text()}`);
  const headers = { authorization: 'Bearer sk-bench', 'x-compactor-key': key, 'x-compactor-session': sessionId };
  const turns = [];
  for (let j = 1; j < conversation.length; j += 1) {
    const next = conversation[j];
    if (next.role !== 'assistant') continue;
    // The upstream answers with the run's own next assistant turn, so the agent's history and the stored one agree.
    upstream.respondWith(() => ({ text: next.content, toolCalls: (next.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, input: JSON.parse(c.function.arguments) })) }));
    const before = upstream.forwarded.length;
    const res = await post(`${apiUrl}/v1/proxy/openai/v1/chat/completions`, headers, { model: 'gpt-4o', max_tokens: 1024, messages: conversation.slice(0, j) });
    if (res.status !== 200) throw new Error(`prefix replay: ${res.status} ${res.text.slice(0, 300)}`);
    turns.push({ body: upstream.forwarded[before], version: Number(res.headers['x-compactor-context-version']), fallback: res.headers['x-compactor-fallback'] === 'applied', tokens: Number(res.headers['x-compactor-context-tokens']) });
  }
  upstream.respondWith(() => undefined);
  let shared = 0;
  let compaction = 0;
  let fallback = 0;
  let other = 0;
  for (let i = 1; i < turns.length; i += 1) {
    const [a, b] = [turns[i - 1].body.messages, turns[i].body.messages];
    if (a.length <= b.length && a.every((m, k) => JSON.stringify(m) === JSON.stringify(b[k]))) shared += 1;
    else if (turns[i - 1].version !== turns[i].version) compaction += 1;
    else if (turns[i - 1].fallback || turns[i].fallback) fallback += 1;
    else other += 1;
  }
  const pairs = turns.length - 1;
  const pct = (n) => `${fmt((n / pairs) * 100)}%`;
  log(`prefix sharing: ${shared}/${pairs} (${pct(shared)})`);
  const markdown = [
    '### Prefix sharing between consecutive forwarded requests',
    '',
    `The five real SWE-agent runs of testdata/, ${PREFIX_ROUNDS} times over as one agent run (${conversation.length} messages, ${turns.length} requests),`,
    `through the proxy on gpt-4o with a ${fmtInt(PREFIX_WINDOW)}-token window (balanced preset, compactions in the worker as they come).`,
    'A pair shares its prefix when every message of the earlier forwarded request is, byte for byte, the start of the later one.',
    '',
    '| consecutive pairs | share the prefix | changed with a compaction applied | changed while the fallback acted | changed otherwise |',
    '|---:|---:|---:|---:|---:|',
    `| ${pairs} | ${shared} (${pct(shared)}) | ${compaction} (${pct(compaction)}) | ${fallback} (${pct(fallback)}) | ${other} |`,
    '',
    `Context versions at the end: ${turns.at(-1)?.version ?? 0}; requests that needed the fallback: ${turns.filter((t) => t.fallback).length};`,
    `largest forwarded context: ${fmtInt(Math.max(...turns.map((t) => t.tokens)))} tokens. The window is far smaller than any real model's, so`,
    'compactions come every few turns here; on a real window they are rare and the share of cache hits higher. Between',
    'compactions the forwarded prefix only grows, except while Guarantee 4\'s fallback keeps an over-budget context within',
    'the window until the compaction that was scheduled is applied.',
  ].join('\n');
  return { markdown };
}
