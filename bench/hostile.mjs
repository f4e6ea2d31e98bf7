// Hostile input benchmark (issue #15 item 1 and the 30 MB tool result of its fault list). Against
// the running API and a worker, for each of balanced, factor3 and checkpoint-aging: issue #15's
// F1, F2 and F4 inputs at 1 MB each in one conversation (3 MB) are appended, the context is read
// and a compaction is asked for and waited on, while GET /health is probed back to back; then one
// 30 MB tool result without whitespace is appended and read. Target: every request answers within
// 1 s and /health within 100 ms meanwhile. Medians over the rounds; the slowest /health is the max.
//
// The 30 MB part: one tool result of 30 MB of shell and log output (bench/lib/log-text.mjs), appended
// to a new session on a freshly started API process per round, so the process's peak resident memory
// during the append (VmHWM, reset through /proc/<pid>/clear_refs just before) is the append's alone.
// BENCH_BEFORE_ROOT=<a built checkout of an earlier commit> runs that tree's API too, interleaved,
// on a database migrated by that tree's own migrations (and a queue prefix no worker reads).
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dropDatabase, recreateDatabase } from './lib/database.mjs';
import { logText } from './lib/log-text.mjs';
import { fmt, fmtInt, median } from './lib/stats.mjs';

const MB = 1 << 20;
const ROUNDS = 3;
/** Rounds of the 30 MB append, each on a fresh API process per build. */
const BIG_ROUNDS = 3;
const PRESETS = ['balanced', 'factor3', 'checkpoint-aging'];

// F1: a goal marker followed by a megabyte of spaces (the status regex was quadratic: ~17 min).
const F1 = `[CHECKPOINT] a${' '.repeat(MB)}b`;
// F2: one line of a megabyte of dashes in a database result (the separator regex was cubic).
const F2 = `id | name\n${'-'.repeat(MB)}\n1 | x\n(1 row)`;
// F4: an `ls -F` listing line (the listing regex was exponential) and a megabyte-long command.
const F4_LISTING = `${'src/\tlib/\t'.repeat(MB / 10)}run.sh*`;
const F4_COMMAND = `echo ${'1'.repeat(MB)}`;

function conversation() {
  return [
    { role: 'user', content: 'Inspect the database and the files.' },
    { role: 'assistant', content: F1, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: F4_COMMAND }) } }] },
    { role: 'tool', tool_call_id: 'call_1', content: `${F4_LISTING}\n${F2}` },
    { role: 'assistant', content: 'Done inspecting.' },
  ];
}

export async function run({ apiUrl, key, machine, log, root, serviceEnv, port, databaseUrl }) {
  const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const call = async (method, route, body, base = apiUrl) => {
    const res = await fetch(`${base}${route}`, { method, headers: auth, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : undefined;
  };
  /** Runs `send` while probing /health back to back: its time and the slowest probe. */
  const timed = async (send, base = apiUrl) => {
    let done = false;
    let slowest = 0;
    const probes = (async () => {
      while (!done) {
        const started = performance.now();
        await (await fetch(`${base}/health`)).arrayBuffer();
        slowest = Math.max(slowest, performance.now() - started);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const started = performance.now();
    let result;
    let ms;
    try {
      result = await send();
      ms = performance.now() - started;
    } finally {
      done = true;
      // The probe in flight when the request ended counts too.
      await probes;
    }
    return { result, ms, slowest };
  };
  const jobEnd = async (jobId) => {
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const job = await call('GET', `/v1/jobs/${jobId}`);
      // A trigger folded into a job that had not started: that job does the work.
      if (job.supersededBy && job.supersededBy !== jobId) {
        jobId = job.supersededBy;
        continue;
      }
      if (['succeeded', 'skipped', 'failed'].includes(job.status)) return job;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`job ${jobId} did not end within 120 s`);
  };

  if (process.env.BENCH_HOSTILE_30MB_ONLY) {
    // Only the 30 MB part (an experiment: run with --no-write, the section is partial).
    return (await bigResult({ key, log, root, serviceEnv, port, databaseUrl, call, timed, jobEnd })).lines.join('\n');
  }
  const body = JSON.stringify({ messages: conversation() });
  const rows = [];
  for (const preset of PRESETS) {
    const samples = { append: [], read: [], compact: [], job: [], health: [] };
    for (let round = 0; round < ROUNDS; round += 1) {
      const id = `hostile-${preset}-${round}-${Date.now().toString(36)}`;
      await call('POST', '/v1/sessions', { id, model: 'gpt-4o', policy: { preset } });
      const append = await timed(() => call('POST', `/v1/sessions/${id}/messages`, body));
      const read = await timed(() => call('GET', `/v1/sessions/${id}/context?format=openai`));
      const compact = await timed(() => call('POST', `/v1/sessions/${id}/compact`, {}));
      const started = performance.now();
      const job = compact.result?.job?.id ? await jobEnd(compact.result.job.id) : undefined;
      const jobMs = performance.now() - started;
      samples.append.push(append.ms);
      samples.read.push(read.ms);
      samples.compact.push(compact.ms);
      samples.job.push(jobMs);
      samples.health.push(Math.max(append.slowest, read.slowest, compact.slowest));
      log(`${preset} round ${round + 1}: append ${fmt(append.ms)} ms, read ${fmt(read.ms)} ms, compact ${fmt(compact.ms)} ms, job ${job?.status ?? '—'} in ${fmt(jobMs)} ms, slowest /health ${fmt(Math.max(append.slowest, read.slowest, compact.slowest))} ms`);
    }
    rows.push({ preset, samples });
  }

  // One 30 MB tool result (it once took one append 88 s and 3.8 GB of API memory), on fresh API processes.
  const big = await bigResult({ key, log, root, serviceEnv, port, databaseUrl, call, timed, jobEnd });

  const verdict = (ok) => (ok ? 'met' : '**missed**');
  const worstRequest = Math.max(...rows.flatMap((r) => [...r.samples.append, ...r.samples.read, ...r.samples.compact]));
  const worstHealth = Math.max(...rows.flatMap((r) => r.samples.health));
  const lines = [
    '## Hostile input (`npm run bench -- hostile`)',
    '',
    `Machine: ${machine}. The built API and a worker (local summarizer), ${ROUNDS} rounds per preset; medians, and the slowest /health probe over every round.`,
    'Each session gets one conversation holding issue #15\'s F1 (a goal marker before a megabyte of spaces), F2 (a megabyte-long',
    'table separator) and F4 (a megabyte-long command and an `ls -F` listing line) inputs: 3 MB in one append.',
    '',
    '| preset | append | context read | compact request | compaction job, end to end | slowest /health |',
    '|---|---:|---:|---:|---:|---:|',
    ...rows.map(({ preset, samples }) => `| ${preset} | ${fmt(median(samples.append))} ms | ${fmt(median(samples.read))} ms | ${fmt(median(samples.compact))} ms | ${fmt(median(samples.job))} ms | ${fmt(Math.max(...samples.health))} ms |`),
    '',
    ...big.lines,
    '',
    `Targets: every request on the 3 MB inputs within 1 s — ${verdict(worstRequest <= 1000)} (slowest ${fmtInt(worstRequest)} ms; the API starts its token pool's threads`,
    `before it listens); /health within 100 ms meanwhile — ${verdict(worstHealth <= 100)} (slowest ${fmtInt(worstHealth)} ms). The bench's client runs on the same 2 cores,`,
    'building and sending 3 MB bodies while it probes; the API thread\'s longest pauses are garbage collection of the megabyte strings.',
  ];
  return lines.join('\n');
}

/** Whether the slowest of these /health probes was within 100 ms, and how slow it was. */
const verdictOf = (health) => `${Math.max(...health) <= 100 ? 'met' : '**missed**'} (slowest ${fmtInt(Math.max(...health))} ms)`;

/** The earlier tree's commit, as the table names it. */
function beforeCommit(beforeRoot) {
  const head = spawnSync('git', ['-C', beforeRoot, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  return head.status === 0 ? head.stdout.trim() : path.basename(beforeRoot);
}

/** Resident memory now and at its peak since the last reset, in MB (/proc/<pid>/status). */
function memoryMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name) => Number(status.split('\n').find((l) => l.startsWith(`${name}:`)).split(/\s+/)[1]) / 1024;
  return { rss: field('VmRSS'), peak: field('VmHWM') };
}

/** Starts a built API of `treeRoot` on `apiPort`; resolves once it is ready. */
async function startApi(treeRoot, env, apiPort) {
  const child = spawn(process.execPath, [path.join(treeRoot, 'dist/apps/api/apps/api/src/main.js')], { env: { ...env, PORT: String(apiPort) }, stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${apiPort}`;
  for (const deadline = Date.now() + 90_000; Date.now() < deadline; ) {
    if (child.exitCode !== null) throw new Error(`the API of ${treeRoot} exited with code ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/health/ready`)).ok) return { child, url };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill('SIGTERM');
  throw new Error(`the API of ${treeRoot} did not become ready within 90 s`);
}

async function stopApi(api) {
  if (api.child.exitCode === null && api.child.signalCode === null) {
    api.child.kill('SIGTERM');
    await once(api.child, 'exit');
  }
}

/** A database of its own for the earlier tree's API, migrated by that tree's migrations. */
async function beforeDatabase(baseUrl, beforeRoot) {
  const name = `compactor_bench_before_${process.pid}`;
  const url = await recreateDatabase(baseUrl, name);
  const { prisma } = await import(path.join(beforeRoot, 'scripts/lib/prisma.mjs'));
  const migrated = prisma(['migrate', 'deploy'], { databaseUrl: url });
  if (migrated.status !== 0) throw new Error(`migrating the earlier tree's database failed: ${migrated.stderr}`);
  return { url, drop: () => dropDatabase(baseUrl, name) };
}

/** The 30 MB append, BIG_ROUNDS times per build, each on a fresh API process; the table's lines. */
async function bigResult({ key, log, root, serviceEnv, port, databaseUrl, call, timed, jobEnd }) {
  const text = logText(30 * MB);
  const textHash = createHash('sha256').update(text).digest('hex');
  const lineCount = text.split('\n').length - 1;
  const body = JSON.stringify({
    model: 'gpt-4o',
    format: 'openai',
    messages: [
      { role: 'user', content: 'Run the test suite and show me the whole log.' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_log', type: 'function', function: { name: 'bash', arguments: '{"command":"npm test 2>&1"}' } }] },
      { role: 'tool', tool_call_id: 'call_log', content: text },
    ],
  });
  const beforeRoot = process.env.BENCH_BEFORE_ROOT;
  const before = beforeRoot ? await beforeDatabase(databaseUrl, beforeRoot) : undefined;
  // No worker takes these APIs' jobs (a queue prefix of their own): both builds' reads and /health probes run beside the same load.
  const idleQueue = () => `bench-30mb-${process.pid}-${randomBytes(3).toString('hex')}`;
  const builds = [{ label: 'this build', treeRoot: root, env: { ...serviceEnv, QUEUE_PREFIX: idleQueue(), COMPACTOR_INIT_API_KEY: key }, apiPort: port + 40 }];
  if (before) {
    const env = { ...serviceEnv, DATABASE_URL: before.url, QUEUE_PREFIX: idleQueue(), COMPACTOR_INIT_API_KEY: key };
    builds.push({ label: `before (${beforeCommit(beforeRoot)})`, treeRoot: beforeRoot, env, apiPort: port + 41 });
  }
  const samples = new Map(builds.map((b) => [b.label, { append: [], read: [], health: [], peak: [], tokens: new Set() }]));
  const proxySamples = new Map(builds.map((b) => [b.label, { request: [], health: [], peak: [] }]));
  // The proxy's upstream (every build's tenant 'default' sends its Anthropic requests there).
  const upstream = await startUpstream();
  const setUpstream = async (url) => {
    const { default: pg } = await import('pg');
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    await db.query(`UPDATE tenants SET settings = coalesce(settings, '{}'::jsonb) || $1::jsonb WHERE name = 'default'`, [JSON.stringify({ proxy: { anthropicBaseUrl: upstream.url, openaiBaseUrl: upstream.url } })]);
    await db.end();
  };
  const proxyBody = (sessionText) =>
    JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 1024,
      messages: [
        { role: 'user', content: 'Run the test suite and show me the whole log.' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_log', name: 'bash', input: { command: 'npm test 2>&1' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_log', content: sessionText }] },
      ],
    });
  const bigProxyBody = proxyBody(text);
  try {
    for (let round = 0; round < BIG_ROUNDS; round += 1) {
      for (const build of builds) {
        // The same 30 MB through the Anthropic proxy route, on a fresh process of its own.
        const proxyApi = await startApi(build.treeRoot, build.env, build.apiPort);
        try {
          await setUpstream(build.env.DATABASE_URL);
          const id = `hostile-30mb-proxy-${round}-${Date.now().toString(36)}`;
          const proxied = (bodyText, session) => async () => {
            const res = await fetch(`${proxyApi.url}/v1/proxy/anthropic/v1/messages`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-compactor-key': key, 'x-api-key': 'sk-ant-bench', 'anthropic-version': '2023-06-01', 'x-compactor-session': session },
              body: bodyText,
            });
            const answer = await res.text();
            if (res.status !== 200) throw new Error(`proxy: ${res.status} ${answer.slice(0, 300)}`);
          };
          await proxied(proxyBody('warm-up'), `${id}-warm`)();
          await new Promise((r) => setTimeout(r, 500));
          writeFileSync(`/proc/${proxyApi.child.pid}/clear_refs`, '5');
          const { rss } = memoryMb(proxyApi.child.pid);
          const request = await timed(proxied(bigProxyBody, id), proxyApi.url);
          const { peak } = memoryMb(proxyApi.child.pid);
          // The proxy stores a request's new messages beside forwarding it: the history is polled until they are there.
          let history;
          for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
            history = await call('GET', `/v1/sessions/${id}/messages?after=2&limit=1`, undefined, proxyApi.url).catch(() => undefined);
            if (history?.messages?.length) break;
          }
          if (!history?.messages?.length) throw new Error(`${build.label}: the proxied 30 MB result was not stored within 60 s`);
          const block = history.messages[0]?.message?.content?.[0];
          const stored = typeof block?.content === 'string' ? block.content : (block?.content?.[0]?.text ?? '');
          if (stored.length !== text.length || createHash('sha256').update(stored).digest('hex') !== textHash) throw new Error(`${build.label}: the proxied 30 MB result did not come back whole`);
          const s = proxySamples.get(build.label);
          s.request.push(request.ms);
          s.health.push(request.slowest);
          s.peak.push(peak - rss);
          log(`30 MB result through the proxy, ${build.label}, round ${round + 1}: request ${fmtInt(request.ms)} ms, peak RSS +${fmtInt(peak - rss)} MB (from ${fmtInt(rss)} MB), slowest /health ${fmtInt(request.slowest)} ms`);
        } finally {
          await stopApi(proxyApi);
        }
        const api = await startApi(build.treeRoot, build.env, build.apiPort);
        try {
          const send = (method, p, b) => call(method, p, b, api.url);
          // A small append first: the process's own start-up work (its first query plans, the tenant's key) is done.
          await send('POST', `/v1/sessions/hostile-30mb-warm-${round}-${Date.now().toString(36)}/messages`, { model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] });
          await new Promise((r) => setTimeout(r, 500));
          writeFileSync(`/proc/${api.child.pid}/clear_refs`, '5'); // resets VmHWM to the current resident size
          const { rss } = memoryMb(api.child.pid);
          const id = `hostile-30mb-${round}-${Date.now().toString(36)}`;
          const append = await timed(() => send('POST', `/v1/sessions/${id}/messages`, body), api.url);
          const { peak } = memoryMb(api.child.pid);
          const read = await timed(() => send('GET', `/v1/sessions/${id}/context?format=openai`), api.url);
          // The history keeps the result whole.
          const history = await send('GET', `/v1/sessions/${id}/messages?after=2&limit=1`);
          const stored = history.messages[0]?.message?.content ?? '';
          if (stored.length !== text.length || createHash('sha256').update(stored).digest('hex') !== textHash) throw new Error(`${build.label}: the 30 MB result did not come back whole`);
          const s = samples.get(build.label);
          s.append.push(append.ms);
          s.read.push(read.ms);
          s.health.push(Math.max(append.slowest, read.slowest));
          s.peak.push(peak - rss);
          s.tokens.add(history.messages[0].tokens);
          log(`30 MB result, ${build.label}, round ${round + 1}: append ${fmtInt(append.ms)} ms, peak RSS +${fmtInt(peak - rss)} MB (from ${fmtInt(rss)} MB), read ${fmtInt(read.ms)} ms, slowest /health ${fmtInt(Math.max(append.slowest, read.slowest))} ms, ${history.messages[0].tokens} tokens`);
        } finally {
          await stopApi(api);
        }
      }
    }
  } finally {
    upstream.server.close();
    await before?.drop().catch((error) => log(`could not drop the earlier tree's database: ${error.message}`));
  }
  // The worker's job over it, once, through the runner's API (which a worker serves).
  const jobSession = `hostile-30mb-job-${Date.now().toString(36)}`;
  const appended = await call('POST', `/v1/sessions/${jobSession}/messages`, body);
  const jobStarted = performance.now();
  const jobId = appended?.compaction?.jobId;
  // The job may not end within jobEnd's deadline (on log text it stalled past its lock, see docs/reliability.md): its state then.
  const job = jobId ? await jobEnd(jobId).catch(() => call('GET', `/v1/jobs/${jobId}`)) : undefined;
  const jobMs = performance.now() - jobStarted;
  log(`30 MB result: the worker's job ${job ? `${job.trigger} ${job.status} after ${fmtInt(jobMs)} ms${job.error ? `: ${job.error}` : ''}` : 'was not scheduled'}`);
  const rows = builds.map(({ label }) => {
    const s = samples.get(label);
    return `| ${label} | ${fmtInt(median(s.append))} ms | +${fmtInt(median(s.peak))} MB | ${fmtInt(median(s.read))} ms | ${fmtInt(Math.max(...s.health))} ms | ${[...s.tokens].map(fmtInt).join(', ')} |`;
  });
  const proxyRows = builds.map(({ label }) => {
    const s = proxySamples.get(label);
    return `| ${label} | ${fmtInt(median(s.request))} ms | +${fmtInt(median(s.peak))} MB | ${fmtInt(Math.max(...s.health))} ms |`;
  });
  return {
    lines: [
      `**A 30 MB tool result**: ${fmtInt(lineCount)} lines of shell and log output (server log lines, stack traces, compiler errors, a listing, JSON log lines,`,
      `test results) in one OpenAI tool message, appended to a new session on a freshly started API process, ${BIG_ROUNDS} rounds per build, interleaved;`,
      "medians, and the slowest /health over every round. Peak RSS is the API process's VmHWM during the append minus its resident size just before",
      '(reset through /proc/<pid>/clear_refs). The history gave the result back whole (length and SHA-256) in every round.',
      '',
      "| build | append | peak RSS during the append | context read | slowest /health | the message's tokens |",
      '|---|---:|---:|---:|---:|---:|',
      ...rows,
      '',
      "**The same 30 MB through the proxy**: an Anthropic Messages request (`/v1/proxy/anthropic/v1/messages`) whose last message is the",
      'tool_result, to a new session on a freshly started API process per round, interleaved with the rows above; the upstream is a',
      'loopback server that answers at once. The proxy records the request whole (the history gave it back, length and SHA-256, every',
      "round) and forwards the context fitted to the model's window. Peak RSS as above.",
      '',
      '| build | proxied request, end to end | peak RSS during it | slowest /health |',
      '|---|---:|---:|---:|',
      ...proxyRows,
      '',
      `The 30 MB request, this build: /health within 100 ms meanwhile — appended over REST ${verdictOf(samples.get('this build').health)}, through the proxy ${verdictOf(proxySamples.get('this build').health)}.`,
      '',
      job
        ? `The worker's ${job.trigger} job over the same append (once, this build) ended ${job.status} ${fmtInt(jobMs)} ms after the append${job.error ? ` (${job.error})` : ''}${job.attempts ? `, attempts ${job.attempts}` : ''} (steps: ${(job.steps ?? []).join(', ') || '—'}).`
        : 'No worker job was scheduled for it.',
    ],
  };
}

/** A loopback Anthropic/OpenAI upstream that answers every request at once with a short text. */
async function startUpstream() {
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const payload = JSON.stringify({
        id: 'msg_bench',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content: [{ type: 'text', text: 'The log shows the suite passed.' }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 8 },
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
      res.end(payload);
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}
