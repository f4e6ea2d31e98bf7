// Hostile input benchmark (issue #15 item 1 and the 30 MB tool result of its fault list). Against
// the running API and a worker, for each of balanced, factor3 and checkpoint-aging: issue #15's
// F1, F2 and F4 inputs at 1 MB each in one conversation (3 MB) are appended, the context is read
// and a compaction is asked for and waited on, while GET /health is probed back to back; then one
// 30 MB tool result without whitespace is appended and read. Target: every request answers within
// 1 s and /health within 100 ms meanwhile. Medians over the rounds; the slowest /health is the max.
import { fmt, fmtInt, median } from './lib/stats.mjs';

const MB = 1 << 20;
const ROUNDS = 3;
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

/** 30 MB of base64-like text without a single space: one tool result. */
function hugeResult() {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  let block = '';
  for (let i = 0; i < 4096; i += 1) block += alphabet[(i * 37 + 11) % alphabet.length];
  return block.repeat((30 * MB) / 4096);
}

export async function run({ apiUrl, key, machine, log }) {
  const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const call = async (method, path, body) => {
    const res = await fetch(`${apiUrl}${path}`, { method, headers: auth, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : undefined;
  };
  /** Runs `send` while probing /health back to back: its time and the slowest probe. */
  const timed = async (send) => {
    let done = false;
    let slowest = 0;
    const probes = (async () => {
      while (!done) {
        const started = performance.now();
        await (await fetch(`${apiUrl}/health`)).arrayBuffer();
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
      if (['succeeded', 'skipped', 'failed'].includes(job.status)) return job;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`job ${jobId} did not end within 120 s`);
  };

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

  // One 30 MB tool result without whitespace (it once took one append 88 s and 3.8 GB of API memory).
  const huge = hugeResult();
  const hugeId = `hostile-30mb-${Date.now().toString(36)}`;
  const rssBefore = await residentMb(apiUrl);
  const hugeAppend = await timed(() =>
    call('POST', `/v1/sessions/${hugeId}/messages`, {
      model: 'gpt-4o',
      format: 'openai',
      messages: [
        { role: 'user', content: 'Dump the blob.' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_blob', type: 'function', function: { name: 'read_file', arguments: '{"path":"blob.b64"}' } }] },
        { role: 'tool', tool_call_id: 'call_blob', content: huge },
      ],
    }),
  );
  const hugeRead = await timed(() => call('GET', `/v1/sessions/${hugeId}/context?format=openai`));
  const rssAfter = await residentMb(apiUrl);
  // The worker's ingest run over it (balanced offloads a result that large to an artifact).
  const hugeJobId = hugeAppend.result?.compaction?.jobId;
  const jobStarted = performance.now();
  const hugeJob = hugeJobId ? await jobEnd(hugeJobId) : undefined;
  const hugeJobMs = performance.now() - jobStarted;
  log(`30 MB result: worker job ${hugeJob?.status ?? 'not scheduled'} ${hugeJob ? `(${hugeJob.trigger}) in ${fmt(hugeJobMs)} ms after the read` : ''}`);
  log(`30 MB result: append ${fmt(hugeAppend.ms)} ms, read ${fmt(hugeRead.ms)} ms, slowest /health ${fmt(Math.max(hugeAppend.slowest, hugeRead.slowest))} ms, API RSS ${rssBefore} → ${rssAfter} MB`);

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
    `A 30 MB tool result without whitespace, appended and read once: append ${fmtInt(hugeAppend.ms)} ms, context read ${fmtInt(hugeRead.ms)} ms,`,
    `slowest /health ${fmtInt(Math.max(hugeAppend.slowest, hugeRead.slowest))} ms; the API's resident memory ${rssBefore} MB before, ${rssAfter} MB after.`,
    hugeJob ? `The worker's ${hugeJob.trigger} job over it ended ${hugeJob.status} ${fmtInt(hugeJobMs)} ms after the read (steps: ${(hugeJob.steps ?? []).join(', ') || '—'}).` : 'No worker job was scheduled for it.',
    '',
    `Targets: every request on the 3 MB inputs within 1 s — ${verdict(worstRequest <= 1000)} (slowest ${fmtInt(worstRequest)} ms; the API starts its token pool's threads`,
    `before it listens); /health within 100 ms meanwhile — ${verdict(worstHealth <= 100)} (slowest ${fmtInt(worstHealth)} ms). The bench's client runs on the same 2 cores,`,
    'building and sending 3 MB bodies while it probes; the API thread\'s longest pauses are garbage collection of the megabyte strings.',
  ];
  return lines.join('\n');
}

/** The API's resident memory in MB, from its Prometheus metrics. */
async function residentMb(apiUrl) {
  const text = await (await fetch(`${apiUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('compactor_process_resident_memory_bytes '));
  return line ? Math.round(Number(line.split(' ')[1]) / MB) : '?';
}
