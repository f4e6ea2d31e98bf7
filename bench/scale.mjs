// Scale-out benchmark (issue #18, "Many processes"): 1, 2 and 4 API processes and 1, 2 and 4
// workers on this machine, against the same PostgreSQL and Redis (the run's own database and queue
// prefix). It reports:
// - append throughput per number of APIs: concurrent agent loops, one message per request, spread
//   round-robin over the APIs; afterwards every session must hold exactly what was sent, in order,
//   seqs gap-free (nothing lost, nothing duplicated);
// - compaction throughput per number of workers: sessions appended over their threshold at once,
//   timed until every compaction they triggered has ended; afterwards no session may have had two
//   compactions running at once (their rows' start-finish spans never overlap) and no job may be
//   left queued or running.
//
//   npm run bench -- scale
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fmt, fmtInt, percentile } from './lib/stats.mjs';
import { generateSession } from './lib/workload.mjs';

const COUNTS = [1, 2, 4];
/** Each configuration runs this many times, interleaved with the others; the tables give the run of median throughput, checks from every run. */
const ROUNDS = 3;
/** Concurrent agent loops in the append phase, and the requests each sends. */
const CLIENTS = 16;
const REQUESTS_PER_CLIENT = 120;
/** Sessions appended over their threshold per worker configuration, and their size. */
const COMPACTION_SESSIONS = 40;
const COMPACTION_SESSION_MESSAGES = 150;
const COMPACTION_WINDOW = 16_000;
const COMPACTION_DEADLINE_MS = 240_000;

export async function run({ key, databaseUrl, root, machine, log, serviceEnv, port }) {
  const loadAtStart = os.loadavg()[0];
  const { default: pg } = await import('pg');
  const db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  db.on('error', () => undefined);
  // Processes of this benchmark's own, on ports after the runner's API and a queue prefix of their own.
  const queuePrefix = `scale-${process.pid}-${randomBytes(3).toString('hex')}`;
  const env = { ...serviceEnv, QUEUE_PREFIX: queuePrefix, COMPACTOR_INIT_API_KEY: key };
  const children = new Set();
  const killAll = () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.once('exit', killAll);

  const startApi = async (n) => {
    const apiPort = port + 20 + n;
    const child = spawn(process.execPath, [path.join(root, 'dist/apps/api/apps/api/src/main.js')], { env: { ...env, PORT: String(apiPort) }, stdio: ['ignore', 'ignore', 'inherit'] });
    children.add(child);
    const url = `http://127.0.0.1:${apiPort}`;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`API ${n} exited with code ${child.exitCode}`);
      try {
        if ((await fetch(`${url}/health/ready`)).ok) return { child, url };
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(`API ${n} did not become ready within 60 s`);
  };
  const startWorker = async () => {
    const child = spawn(process.execPath, [path.join(root, 'dist/apps/worker/apps/worker/src/main.js')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    children.add(child);
    let output = '';
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('a worker did not start within 60 s')), 60_000);
      child.stdout.on('data', (chunk) => {
        if (output === null) return;
        output += chunk;
        if (output.includes('Compactor worker started')) {
          output = null;
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`a worker exited with code ${code}`));
      });
    });
    return { child };
  };
  const stop = async (procs) => {
    for (const p of procs) p.child.kill('SIGTERM');
    await Promise.all(procs.map((p) => (p.child.exitCode === null && p.child.signalCode === null ? once(p.child, 'exit') : undefined)));
    for (const p of procs) children.delete(p.child);
  };
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const append = async (url, sessionId, body) => {
    const res = await fetch(`${url}/v1/sessions/${sessionId}/messages`, { method: 'POST', headers, body: JSON.stringify(body) });
    const json = await res.json();
    if (res.status !== 201) throw new Error(`append ${sessionId}: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
    return json;
  };

  const appendRows = [];
  const compactionRows = [];
  try {
    // 1. Append throughput per number of API processes.
    const appendRun = async (apis) => {
      const started = await Promise.all(Array.from({ length: apis }, (_, i) => startApi(i)));
      const tag = `scale-a${apis}-${randomBytes(3).toString('hex')}`;
      const sent = Array.from({ length: CLIENTS }, () => []);
      const latencies = [];
      // Every loop's session exists before the clock starts (its first append creates it).
      await Promise.all(
        Array.from({ length: CLIENTS }, (_, c) =>
          append(started[c % apis].url, `${tag}-${c}`, { format: 'openai', model: 'gpt-4o', contextWindow: 50_000_000, messages: [{ role: 'system', content: `Agent loop ${c}.` }] }),
        ),
      );
      const cpu0 = started.map((p) => cpuSeconds(p.child.pid));
      const pg0 = postgresCpuSeconds();
      const client0 = process.cpuUsage();
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, c) => {
          for (let i = 0; i < REQUESTS_PER_CLIENT; i++) {
            const text = `loop ${c} turn ${i}: ${i % 2 ? 'ran the tests; 3 failed in tests/test_api.py' : 'run the failing tests again and fix the first one'}`;
            const s = performance.now();
            // Spread over the processes by request, as a load balancer would.
            await append(started[(c + i) % apis].url, `${tag}-${c}`, { format: 'openai', messages: [{ role: i % 2 ? 'assistant' : 'user', content: text }] });
            latencies.push(performance.now() - s);
            sent[c].push(text);
          }
        }),
      );
      const seconds = (performance.now() - t0) / 1000;
      const apiCpu = started.reduce((n, p, i) => n + cpuSeconds(p.child.pid) - cpu0[i], 0);
      const pgCpu = postgresCpuSeconds() - pg0;
      const clientUsage = process.cpuUsage(client0);
      const clientCpu = (clientUsage.user + clientUsage.system) / 1e6;
      // Nothing lost, nothing duplicated: each session holds the system message, then exactly what was sent, in order, seqs 1..n.
      const { rows } = await db.query(
        `SELECT s.external_id AS session, array_agg(m.seq ORDER BY m.seq) AS seqs, array_agg(m.blocks->0->>'text' ORDER BY m.seq) AS texts
         FROM sessions s JOIN messages m ON m.session_id = s.id WHERE s.external_id LIKE $1 GROUP BY s.external_id`,
        [`${tag}-%`],
      );
      let bad = 0;
      for (let c = 0; c < CLIENTS; c++) {
        const row = rows.find((r) => r.session === `${tag}-${c}`);
        const want = [`Agent loop ${c}.`, ...sent[c]];
        const ok = row && row.seqs.length === want.length && row.seqs.every((s, i) => s === i + 1) && row.texts.every((t, i) => t === want[i]);
        if (!ok) bad += 1;
      }
      const requests = CLIENTS * REQUESTS_PER_CLIENT;
      log(`${apis} API(s): ${fmtInt(requests / seconds)} appends/s, p50 ${fmt(percentile(latencies, 50))} ms, sessions not exact: ${bad}`);
      await stop(started);
      return { apis, requests, seconds, perSecond: requests / seconds, p50: percentile(latencies, 50), p95: percentile(latencies, 95), bad, apiCores: apiCpu / seconds, clientCores: clientCpu / seconds, pgCores: pgCpu / seconds };
    };
    // Rounds interleave the configurations, so a load spike on this shared machine does not fall on one of them only.
    const appendRuns = [];
    for (let round = 0; round < ROUNDS; round++) for (const apis of rotate(COUNTS, round)) appendRuns.push(await appendRun(apis));
    for (const apis of COUNTS) appendRows.push(medianRun(appendRuns.filter((r) => r.apis === apis)));

    // 2. Compaction throughput per number of workers (two APIs take the appends).
    const apisForCompaction = await Promise.all([0, 1].map((i) => startApi(i)));
    const sessions = Array.from({ length: COMPACTION_SESSIONS }, (_, i) => generateSession(9100 + i, COMPACTION_SESSION_MESSAGES, i % 2 ? 'openai' : 'anthropic'));
    const compactionRun = async (workers) => {
      const started = [];
      for (let i = 0; i < workers; i++) started.push(await startWorker());
      const tag = `scale-w${workers}-${randomBytes(3).toString('hex')}`;
      const cpu0 = started.map((p) => cpuSeconds(p.child.pid));
      const pg0 = postgresCpuSeconds();
      const t0 = performance.now();
      const answers = await Promise.all(
        sessions.map((s, i) =>
          append(apisForCompaction[i % 2].url, `${tag}-${i}`, {
            format: s.format,
            model: s.format === 'anthropic' ? 'claude-sonnet-4-5' : 'gpt-4o',
            contextWindow: COMPACTION_WINDOW,
            ...(s.system ? { system: s.system } : {}),
            messages: s.messages,
          }),
        ),
      );
      // Done when every job of these sessions has ended and none is left queued or running.
      const jobsOf = async () =>
        (
          await db.query(
            `SELECT j.status::text AS status, j.session_id AS "sessionId", j.started_at AS "startedAt", j.finished_at AS "finishedAt"
             FROM compaction_jobs j JOIN sessions s ON s.id = j.session_id WHERE s.external_id LIKE $1`,
            [`${tag}-%`],
          )
        ).rows;
      let jobs = await jobsOf();
      const deadline = Date.now() + COMPACTION_DEADLINE_MS;
      while (Date.now() < deadline && (jobs.length < COMPACTION_SESSIONS || jobs.some((j) => j.status === 'queued' || j.status === 'running'))) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        jobs = await jobsOf();
      }
      const seconds = (performance.now() - t0) / 1000;
      const workerCores = started.reduce((n, p, i) => n + cpuSeconds(p.child.pid) - cpu0[i], 0) / seconds;
      const pgCores = (postgresCpuSeconds() - pg0) / seconds;
      const succeeded = jobs.filter((j) => j.status === 'succeeded');
      const unfinished = jobs.filter((j) => j.status === 'queued' || j.status === 'running').length;
      // No session ever had two compactions at once: the runs of one session never overlap in time.
      let overlaps = 0;
      const bySession = new Map();
      for (const j of jobs) if (j.startedAt && j.finishedAt) bySession.set(j.sessionId, [...(bySession.get(j.sessionId) ?? []), j]);
      for (const runs of bySession.values()) {
        runs.sort((a, b) => a.startedAt - b.startedAt);
        for (let i = 1; i < runs.length; i++) if (runs[i].startedAt < runs[i - 1].finishedAt) overlaps += 1;
      }
      const { rows: counts } = await db.query(
        `SELECT (SELECT count(*)::int FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.external_id LIKE $1) AS messages,
                (SELECT count(DISTINCT (m.session_id, m.seq))::int FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.external_id LIKE $1) AS distinct_seqs,
                (SELECT sum(last_seq)::int FROM sessions WHERE external_id LIKE $1) AS last_seqs`,
        [`${tag}-%`],
      );
      // Every message the appends answered for (their lastSeq: canonical messages, a system prompt included), stored once.
      const expected = answers.reduce((n, a) => n + a.lastSeq, 0);
      const result = {
        workers,
        sessions: COMPACTION_SESSIONS,
        jobs: jobs.length,
        succeeded: succeeded.length,
        other: jobs.length - succeeded.length - unfinished,
        unfinished,
        seconds,
        perSecond: succeeded.length / seconds,
        overlaps,
        messagesOk: counts[0].messages === expected && counts[0].distinct_seqs === expected && counts[0].last_seqs === expected,
        workerCores,
        pgCores,
      };
      log(`messages stored ${counts[0].messages}, distinct seqs ${counts[0].distinct_seqs}, sum of last seqs ${counts[0].last_seqs}, answered ${expected}`);
      log(`${workers} worker(s): ${succeeded.length} compactions in ${fmt(seconds)} s (${fmt(succeeded.length / seconds, 2)}/s), unfinished ${unfinished}, overlapping runs ${overlaps}`);
      await stop(started);
      return result;
    };
    const compactionRuns = [];
    for (let round = 0; round < ROUNDS; round++) for (const workers of rotate(COUNTS, round)) compactionRuns.push(await compactionRun(workers));
    for (const workers of COUNTS) compactionRows.push(medianRun(compactionRuns.filter((r) => r.workers === workers)));
    await stop(apisForCompaction);
  } finally {
    killAll();
    await Promise.all([...children].map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : undefined)));
    await db.end();
  }

  const base = appendRows[0].perSecond;
  const cbase = compactionRows[0].perSecond;
  const allExact = appendRows.every((r) => r.bad === 0) && compactionRows.every((r) => r.messagesOk);
  const noOverlap = compactionRows.every((r) => r.overlaps === 0 && r.unfinished === 0);
  return [
    '## Scale-out: API processes and workers on one machine',
    '',
    `Run ${new Date().toISOString().slice(0, 10)} on ${machine}. Every process is built and runs with \`NODE_ENV=production\`, log level warn, against the same PostgreSQL and Redis (this run's database and queue prefix); the benchmark's client is one more Node process on the same two cores. The 1-minute load average was ${fmt(loadAtStart, 2)} when the run started (other work on this shared machine moves these numbers; each configuration runs ${ROUNDS} times, interleaved with the others).`,
    '',
    `**Appends.** ${CLIENTS} concurrent agent loops, each on its own session, send ${REQUESTS_PER_CLIENT} one-message appends each, spread round-robin over the API processes (as a load balancer would); the session window holds the whole history, so no compaction runs. Afterwards every session is checked: the messages sent, in order, seqs 1..n.`,
    '',
    '| API processes | appends per run | appends/s (median run) | each run | vs 1 process | p50 | p95 | cores used by the APIs / PostgreSQL / the client | sessions not exact (all runs) |',
    '|---:|---:|---:|---|---:|---:|---:|---:|---:|',
    ...appendRows.map((r) => `| ${r.apis} | ${fmtInt(r.requests)} | ${fmtInt(r.perSecond)} | ${r.runs.map((x) => fmtInt(x)).join(', ')} | ${fmt(r.perSecond / base, 2)}× | ${fmt(r.p50)} ms | ${fmt(r.p95)} ms | ${fmt(r.apiCores, 2)} / ${fmt(r.pgCores, 2)} / ${fmt(r.clientCores, 2)} | ${r.bad} |`),
    '',
    `**Compactions.** ${COMPACTION_SESSIONS} generated coding-agent sessions of ~${COMPACTION_SESSION_MESSAGES} messages (both shapes), each appended at once with a ${fmtInt(COMPACTION_WINDOW)}-token window, so each append crosses the threshold and schedules a compaction (\`balanced\`, local summarizer); two API processes take the appends. Timed from the first append until every job of those sessions has ended. Afterwards: no job left queued or running, no two runs of one session overlapping in time, and every message stored once.`,
    '',
    '| workers | sessions per run | jobs | succeeded | skipped or failed | time | compactions/s (median run) | each run | vs 1 worker | cores used by the workers / PostgreSQL | left unfinished (all runs) | overlapping runs (all runs) | messages exact (all runs) |',
    '|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|',
    ...compactionRows.map(
      (r) =>
        `| ${r.workers} | ${r.sessions} | ${r.jobs} | ${r.succeeded} | ${r.other} | ${fmt(r.seconds)} s | ${fmt(r.perSecond, 2)} | ${r.runs.map((x) => fmt(x, 2)).join(', ')} | ${fmt(r.perSecond / cbase, 2)}× | ${fmt(r.workerCores, 2)} / ${fmt(r.pgCores, 2)} | ${r.unfinished} | ${r.overlaps} | ${r.messagesOk ? 'yes' : '**no**'} |`,
    ),
    '',
    `Checks: nothing lost or duplicated — ${allExact ? 'held in every configuration' : '**failed** (see the tables)'}; at most one compaction at a time per session and nothing left unfinished — ${noOverlap ? 'held in every configuration' : '**failed** (see the table)'}.`,
    '',
    `What bounds the curve here, read off the core columns (CPU seconds per second of wall time, from /proc; PostgreSQL's are all its processes on this machine, other work included): the machine has ${machineCores(machine)} cores, shared by every API process, every worker, PostgreSQL, Redis and the benchmark's own client. Appends: the API processes together use about the same CPU in every configuration, so more processes only split the same work; each append is a PostgreSQL commit (a WAL flush) plus CPU in PostgreSQL, and the time the client waits is mostly PostgreSQL and the scheduling of these processes on two cores, so the curve is flat or falls. Compactions: one worker already keeps about one core busy (the local summarizer, counting, the facts ledger); a second worker can use part of the other core, and a fourth only adds scheduling. On a machine with more cores, API processes and workers share nothing but PostgreSQL and Redis: the same measurement is the one to repeat there, and the bound moves to PostgreSQL's commit rate for appends and to cores for compactions.`,
  ].join('\n');
}

const machineCores = (machine) => machine.split(' ')[0];
/** CPU seconds (user + system) a live process has used, from /proc (Linux); NaN elsewhere. */
function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}
/** CPU seconds of every PostgreSQL process on this machine (its backends for this run's pools live through a phase). */
function postgresCpuSeconds() {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') total += cpuSeconds(entry);
    } catch {
      // exited meanwhile
    }
  }
  return total;
}
const rotate = (list, by) => [...list.slice(by % list.length), ...list.slice(0, by % list.length)];
/** The run of median throughput, with the checks of every run folded in (a failure in any run shows). */
function medianRun(runs) {
  const sorted = [...runs].sort((a, b) => a.perSecond - b.perSecond);
  const mid = sorted[Math.floor(sorted.length / 2)];
  return {
    ...mid,
    runs: runs.map((r) => r.perSecond),
    bad: runs.reduce((n, r) => n + (r.bad ?? 0), 0),
    overlaps: runs.reduce((n, r) => n + (r.overlaps ?? 0), 0),
    unfinished: runs.reduce((n, r) => n + (r.unfinished ?? 0), 0),
    messagesOk: runs.every((r) => r.messagesOk !== false),
  };
}
