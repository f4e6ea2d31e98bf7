import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { CanonicalMessage, toResponses } from '@compactor/compaction';
import { PrismaService } from '@compactor/persistence';
import {
  FakeLlm,
  FakeLlmRequest,
  FakeLlmStep,
  FakeLlmToolCall,
  FakeLlmToolLoopRun,
  pollUntil,
  runClaudeCode,
  runCodex,
  RunningApp,
  startRecordingRelay,
  startWorkerFor,
} from '@compactor/testing';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import request from 'supertest';
import { TestApi } from '../test-app';
import { startProxyTestStack } from './proxy-test-stack';

/**
 * Real clients through the proxy (issue #19): the Claude Code CLI (the devDependency, its default
 * model, its own tools and max_tokens) and the official SDKs' own tool loops (Anthropic's tool
 * runner, OpenAI's runTools; streamed and not), against the fake upstream scripting a multi-turn
 * tool loop whose tool results are large, on sessions created with a small window, with the built
 * worker compacting. What a user relies on: the loop finishes with the scripted answer, the
 * compacted context (checkpoint text) is what goes upstream after the first compaction, the
 * fallback is not needed in the steady state, and nothing forks.
 *
 * The fake upstream paces the loop as a model's thinking time would: it answers a turn once the
 * worker has caught up with what the previous turn appended. Every forwarded body, the headers the
 * client received and the worker's output are written to tmp/real-clients/<session>.json.
 * Build the worker first: `NX_DAEMON=false npx nx run worker:build`.
 */

const ROOT = path.resolve(__dirname, '../../../..');
const CAPTURE_DIR = path.join(ROOT, 'tmp/real-clients');

let api: TestApi;
let fake: FakeLlm;
let worker: RunningApp;
let key: string;
let base: string;
let prisma: PrismaService;

beforeAll(async () => {
  ({ api, fake, key, base } = await startProxyTestStack({ env: { COMPACTOR_PROXY_TIMEOUT_MS: '120000' }, scopes: ['ingest', 'read', 'admin'] }));
  prisma = api.app.get(PrismaService);
  worker = await startWorkerFor(api.config, { LOG_LEVEL: 'warn' });
  mkdirSync(CAPTURE_DIR, { recursive: true });
}, 90_000);
afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await fake?.close();
});

const uid = (name: string) => `${name}-${randomBytes(4).toString('hex')}`;
const http = () => request(api.app.getHttpServer());
const auth = () => ({ Authorization: `Bearer ${key}` });

/** What the client received for one proxied request. */
interface Observed {
  status: number;
  version: number;
  fallback: boolean;
  /** x-compactor-context-tokens: what the proxy counted of the forwarded context. */
  tokens: number;
  forkedFrom?: string;
}

function observedOf(status: number, header: (name: string) => string | null | undefined): Observed {
  const forkedFrom = header('x-compactor-forked-from') ?? undefined;
  return {
    status,
    version: Number(header('x-compactor-context-version') ?? NaN),
    fallback: header('x-compactor-fallback') === 'applied',
    tokens: Number(header('x-compactor-context-tokens') ?? NaN),
    ...(forkedFrom ? { forkedFrom } : {}),
  };
}

/** A fetch that keeps the Compactor headers of every proxied completion the SDK receives. */
function observingFetch(observed: Observed[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (init?.method === 'POST' && /\/(messages|chat\/completions)(\?|$)/.test(String(input))) observed.push(observedOf(response.status, (n) => response.headers.get(n)));
    return response;
  };
}

/** A deterministic text of about `chars` characters, unique to `marker` (a file the agent's tool reads). */
function bigText(marker: string, chars: number): string {
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo', 'lima'];
  const lines = [`${marker}: begin`];
  for (let i = 0; lines.join('\n').length < chars; i++) {
    lines.push(`${marker} line ${String(i).padStart(4, '0')}: ${words[i % 12]} ${words[(i * 7) % 12]} ${words[(i * 5) % 12]} value=${(i * 7919) % 10007}`);
  }
  return lines.join('\n');
}

/**
 * Resolves once the worker has caught up with what the session stored: the previous answer (the
 * calls `callIds`) is recorded, no compaction is queued or running, and one that the latest append
 * made due has run. (The request being answered may store its own new messages only once the
 * upstream answered; its compaction then runs while the client runs its tools, and is waited for
 * at the next turn.) Never rejects: a slow worker only lets the loop go on, which the assertions
 * then show; a timeout is noted in `notes` with what was still awaited.
 */
async function workerCaughtUp(sessionId: string, callIds: string[], notes: string[]): Promise<void> {
  let waitingFor = 'the session';
  try {
    await pollUntil(
      async () => {
        const session = await prisma.session.findFirst({ where: { externalId: sessionId } });
        if (!session) return undefined;
        const tail = await prisma.message.findMany({ where: { sessionId: session.id, seq: { gt: session.lastSeq - 8 } }, orderBy: { seq: 'asc' } });
        const answered = tail.some((m) => m.role === 'assistant' && callIds.some((id) => JSON.stringify(m.raw).includes(id)));
        waitingFor = `the answer calling ${callIds.join(', ')} recorded (the latest messages: ${tail.map((m) => `${m.seq} ${m.role} ${JSON.stringify(m.raw).slice(0, 60)}`).join(' | ')})`;
        if (!answered) return undefined;
        const jobs = await prisma.compactionJob.findMany({ where: { sessionId: session.id, dryRun: false }, orderBy: { createdAt: 'desc' }, take: 5 });
        waitingFor = `the compaction jobs to finish (${jobs.map((j) => `${j.status}${j.reason ? `:${j.reason}` : ''}`).join(', ')})`;
        if (jobs.some((j) => j.status === 'queued' || j.status === 'running')) return undefined;
        const view = (await http().get(`/v1/sessions/${sessionId}`).set(auth()).expect(200)).body as { usage: { contextTokens: number; threshold: number; budget: number } };
        const latest = tail.at(-1)?.createdAt ?? new Date(0);
        const ranSince = jobs.some((j) => j.createdAt >= latest);
        const held = session.compactionHoldTokens !== null && view.usage.contextTokens < session.compactionHoldTokens;
        // Over the threshold, the append schedules a job right after it commits: wait for that one too.
        waitingFor = `a compaction of the ${view.usage.contextTokens} tokens over the ${view.usage.threshold}-token threshold (budget ${view.usage.budget}, hold ${session.compactionHoldTokens})`;
        if (view.usage.contextTokens >= view.usage.threshold && !ranSince && !held) return undefined;
        return true;
      },
      { timeoutMs: Number(process.env.REAL_CLIENTS_PACE_MS ?? 20_000), intervalMs: 40, what: `the worker to catch up with ${sessionId}` },
    );
  } catch (error) {
    notes.push(`${String(error)}; still waiting for ${waitingFor}`);
  }
}

/** The loop's turns, each after the first held until the worker caught up with the previous one. */
function paced(sessionId: string, turns: FakeLlmStep[], notes: string[]): Array<FakeLlmStep | ((r: FakeLlmRequest, turn: number) => FakeLlmStep)> {
  const callsOf = (step: FakeLlmStep): FakeLlmToolCall[] => ('text' in step ? (step.toolCalls ?? []) : []);
  return turns.map((step, k) =>
    k === 0
      ? step
      : () => ({
          until: workerCaughtUp(
            sessionId,
            callsOf(turns[k - 1]).map((c) => c.id),
            notes,
          ),
          then: step,
        }),
  );
}

/** Whether a forwarded body carries checkpoint text (balanced's `[CHECKPOINT …]`, factor3's `[SUMMARY]`). */
const hasCheckpoint = (r: FakeLlmRequest) => /\[CHECKPOINT|\[SUMMARY\]/.test(JSON.stringify(r.body));
/** Whether it carries what a compaction wrote: checkpoint text or the placeholder of a masked or offloaded tool output. */
const hasCompacted = (r: FakeLlmRequest) => /\[CHECKPOINT|\[SUMMARY\]|\[masked tool output|\[offloaded tool output/.test(JSON.stringify(r.body));

interface LoopOutcome {
  session: string;
  run: FakeLlmToolLoopRun;
  observed: Observed[];
  /** Every forwarded request of the loop's client (the loop's and any side request). */
  forwarded: FakeLlmRequest[];
  notes: string[];
  extra?: Record<string, unknown>;
}

/** Writes what the upstream received and what the client saw, for the report of a failing run. */
function capture(outcome: LoopOutcome): string {
  const file = path.join(CAPTURE_DIR, `${outcome.session}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      {
        session: outcome.session,
        observed: outcome.observed,
        notes: outcome.notes,
        ...outcome.extra,
        forwarded: outcome.forwarded.map((r) => ({ index: r.index, path: r.path, query: r.query, headers: r.headers, outcome: r.outcome, inLoop: outcome.run.requests.includes(r), body: r.body })),
        worker: worker.output().slice(-20_000),
      },
      null,
      1,
    ),
  );
  return file;
}

/** A short, readable account of each forwarded request (shown when an assertion fails). */
function summary(outcome: LoopOutcome): string {
  return outcome.forwarded
    .map((r, i) => {
      const body = r.body as { messages?: Array<{ role: string }>; input?: Array<{ role?: string; type?: string }>; max_tokens?: number; tools?: unknown[] };
      const seen = outcome.observed[i];
      // Chat and Messages bodies by role; Responses `input` items by role or type.
      const roles = (body.messages ?? body.input ?? []).map((m) => (('role' in m && m.role) || ('type' in m && m.type) || '?')[0]).join('');
      return `#${i} ${r.path} v${seen?.version} ${seen?.tokens} tokens ${seen?.fallback ? 'FALLBACK ' : ''}${seen?.forkedFrom ? `FORK(${seen.forkedFrom}) ` : ''}${hasCheckpoint(r) ? 'CKPT ' : ''}msgs=${(body.messages ?? body.input)?.length} [${roles}] max_tokens=${body.max_tokens} tools=${body.tools?.length ?? 0} bytes=${JSON.stringify(r.body).length}`;
    })
    .join('\n');
}

/**
 * The behaviour a user relies on, for any client: the loop ran every turn with the tool results
 * reaching the upstream; a compaction was applied and from then on every forwarded body carries
 * checkpoint text and no response needed the fallback; the session never forked.
 */
async function expectCompactedLoop(outcome: LoopOutcome, resultMarkers: string[], expected: { checkpoints: boolean }): Promise<void> {
  const file = capture(outcome);
  const context = `(forwarded bodies and headers in ${file})\n${summary(outcome)}\n${outcome.notes.join('\n')}`;
  const { run, observed } = outcome;

  expect({ done: run.done(), overruns: run.overruns(), context }).toEqual({ done: true, overruns: 0, context });
  // Each tool result came back through the proxy to the upstream in the next request.
  expect(run.results.map((r, k) => Object.values(r).every((text) => text !== undefined && text.includes(resultMarkers[k])))).toEqual(resultMarkers.map(() => true));
  expect(observed.every((o) => o.status === 200)).toBe(true);

  const first = observed.findIndex((o) => o.version >= 1);
  expect({ firstCompactedRequest: first, context }).toEqual({ firstCompactedRequest: expect.any(Number), context });
  expect(first).toBeGreaterThanOrEqual(0);
  expect(first).toBeLessThan(observed.length - 1);
  const after = outcome.forwarded.slice(first);
  // Balanced masks old tool outputs first and writes a checkpoint only when that is not enough: a loop of tool outputs alone
  // under exact gpt-4o counts is compacted by masking, Claude's estimates (×1.2) on these windows need checkpoints.
  const carries = expected.checkpoints ? hasCheckpoint : hasCompacted;
  expect({ withoutCompactedContext: after.filter((r) => !carries(r)).map((r) => outcome.forwarded.indexOf(r)), context }).toEqual({ withoutCompactedContext: [], context });
  expect({ fallbackAfterFirstCompaction: observed.slice(first).flatMap((o, i) => (o.fallback ? [first + i] : [])), context }).toEqual({ fallbackAfterFirstCompaction: [], context });

  expect(observed.filter((o) => o.forkedFrom)).toEqual([]);
  const listed = (await http().get(`/v1/sessions?search=${encodeURIComponent(outcome.session)}&limit=100`).set(auth()).expect(200)).body as { sessions: Array<{ id: string }> };
  expect(listed.sessions.map((s) => s.id).filter((id) => id.includes(':fork-'))).toEqual([]);
}

describe('Claude Code CLI through the proxy', () => {
  /**
   * Claude Code's default max_tokens (2.1.332: 128,000) plus this is the session's window: after its tool schemas
   * (~12 tools, ~31,000 characters) and the safety margin, a budget of about 35,000 tokens. Each turn adds about
   * 2,500 tokens (a 5,000-character file, its line numbers and the call), so that two turns (the new messages are
   * stored once the upstream answered: a compaction they make due is applied from the turn after next) stay within
   * the 20% between balanced's trigger and the budget: the fallback is never needed in the steady state.
   */
  const CONTEXT_ROOM = 45_000;
  const TOOL_TURNS = 16;
  const FINAL = 'All sixteen parts are read: the totals match.';

  // balanced (the default) compacts a loop of tool outputs by masking the old ones (placeholders, no checkpoint yet);
  // factor3 summarizes everything but the latest messages into a checkpoint at 50% of the budget.
  it.each([
    ['balanced', false],
    ['factor3', true],
  ])('runs its own tool loop (Bash cat and Read of large files) to the scripted final answer on a %s session; compactions swap in without the fallback and nothing forks', async (preset, checkpoints) => {
    const session = uid(`claude-code-${preset}`);
    const work = mkdtempSync(path.join(tmpdir(), 'compactor-cc-work-'));
    try {
      mkdirSync(path.join(work, 'data'));
      const markers = Array.from({ length: TOOL_TURNS }, (_, k) => `PART-${String(k).padStart(2, '0')}-MARKER`);
      markers.forEach((marker, k) => writeFileSync(path.join(work, 'data', `part-${String(k).padStart(2, '0')}.txt`), `${bigText(marker, 5_000)}\n`));
      const call = (k: number): FakeLlmToolCall => {
        const file = `data/part-${String(k).padStart(2, '0')}.txt`;
        return k % 2 === 0
          ? { id: `toolu_cc_${String(k).padStart(2, '0')}`, name: 'Bash', input: { command: `cat ${file}`, description: `Show part ${k}` } }
          : { id: `toolu_cc_${String(k).padStart(2, '0')}`, name: 'Read', input: { file_path: path.join(work, file) } };
      };
      const turns: FakeLlmStep[] = [...Array.from({ length: TOOL_TURNS }, (_, k) => ({ text: k === 0 ? 'Reading the parts one by one.' : '', toolCalls: [call(k)] })), { text: FINAL }];
      const notes: string[] = [];
      const loopHeader = `cc-${session}`;
      const run = fake.toolLoop({ match: (r) => r.headers['x-test-loop'] === loopHeader, turns: paced(session, turns, notes) });

      // The session exists first, with a window just above Claude Code's own max_tokens, so compactions come after a handful of turns.
      const maxTokens = 128_000;
      await http()
        .post('/v1/sessions')
        .set(auth())
        .send({ id: session, model: 'claude-opus-5-5', contextWindow: maxTokens + CONTEXT_ROOM, policy: preset })
        .expect(201);
      const relay = await startRecordingRelay(`${base}/v1/proxy/anthropic`);
      const before = fake.requests.length;
      let cli;
      try {
        cli = await runClaudeCode({
          baseUrl: relay.url,
          cwd: work,
          prompt: `Read every file in ${work}/data one at a time and report whether the totals match.`,
          headers: { 'X-Compactor-Key': key, 'X-Compactor-Session': session, 'X-Test-Loop': loopHeader },
          timeoutMs: 150_000,
        });
      } finally {
        await relay.close();
        run.stop();
      }
      const forwarded = fake.requests.slice(before).filter((r) => r.headers['x-test-loop'] === loopHeader);
      const proxied = relay.exchanges.filter((e) => e.method === 'POST' && e.url.startsWith('/v1/messages') && !e.url.startsWith('/v1/messages/count_tokens'));
      const observed = proxied.map((e) => observedOf(e.status ?? 0, (n) => e.responseHeaders?.[n]));
      const sent = proxied.map((e) => e.body as { model?: string; max_tokens?: number; tools?: Array<{ name: string }>; system?: unknown; messages?: Array<{ role: string }> });
      const extra = {
        cli: { exitCode: cli.exitCode, signal: cli.signal, durationMs: cli.durationMs, result: cli.result, stderr: cli.stderr.slice(-4000), stdout: cli.result ? undefined : cli.stdout.slice(-4000) },
        // What the CLI itself sent the proxy (the report's "what Claude Code sends").
        client: {
          requests: relay.exchanges.map((e) => ({ method: e.method, url: e.url, status: e.status, headers: e.requestHeaders, responseHeaders: e.responseHeaders, error: e.error })),
          models: [...new Set(sent.map((b) => b.model))],
          maxTokens: [...new Set(sent.map((b) => b.max_tokens))],
          tools: sent[0]?.tools?.map((t) => t.name),
          toolSchemaChars: JSON.stringify(sent[0]?.tools ?? []).length,
          systemMessageIndexes: sent.map((b) => (b.messages ?? []).flatMap((m, i) => (m.role === 'system' ? [i] : []))),
          firstBody: sent[0],
          sideRequests: fake.requests.slice(before).filter((r) => !run.requests.includes(r)).map((r) => ({ path: r.path, model: r.model, body: r.body })),
        },
      };
      const outcome: LoopOutcome = { session, run, observed, forwarded, notes, extra };
      capture(outcome);

      expect({ exitCode: cli.exitCode, result: cli.result?.result, stderr: cli.stderr.slice(-2000), proxyErrors: proxied.filter((e) => e.status !== 200).map((e) => `${e.status} ${e.responseBody?.slice(0, 500)}`) }).toEqual({
        exitCode: 0,
        result: FINAL,
        stderr: expect.any(String),
        proxyErrors: [],
      });
      // The CLI ran with its own defaults: the max_tokens the window was sized for, and its own tools.
      expect(sent[0]?.max_tokens).toBe(maxTokens);
      expect(sent[0]?.tools?.map((t) => t.name)).toEqual(expect.arrayContaining(['Bash', 'Read']));
      await expectCompactedLoop(outcome, markers, { checkpoints });
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }, 200_000);
});

/** The output items of a streamed Responses answer (its `response.completed` event). */
function completedOutput(sse: string | undefined): unknown[] {
  for (const line of (sse ?? '').split('\n')) {
    if (!line.startsWith('data: ')) continue;
    const event = JSON.parse(line.slice('data: '.length)) as { type?: string; response?: { output?: unknown[] } };
    if (event.type === 'response.completed') return event.response?.output ?? [];
  }
  return [];
}

describe('Codex CLI through the proxy', () => {
  /**
   * Codex (0.171) sends no max_output_tokens: the reserve is a quarter of the window (gpt-5's maximum output is larger),
   * its ~8 tool schemas are ~18,000 characters and its developer instructions ~20,000: a 60,000-token window leaves a budget
   * of about 40,000 tokens, and factor3 writes a checkpoint at half of it. Each turn adds about 2,000 tokens (an
   * 8,000-character file through exec_command), so the first compaction comes after seven or eight turns.
   */
  const WINDOW = 60_000;
  const TOOL_TURNS = 12;
  const FINAL = 'All twelve parts are read: the totals match.';
  /**
   * Codex's model catalog (0.171: `apply_patch_tool_type: "freeform"` for gpt-5.5 and later) makes apply_patch a custom
   * tool (`type: "custom"`, a Lark grammar) for this model: its calls are `custom_tool_call` items and their results
   * `custom_tool_call_output` items. gpt-5-codex and gpt-5 get no apply_patch tool at all from this version.
   */
  const MODEL = 'gpt-5.5';
  /** After these cat turns the fake calls apply_patch once: one pair early (summarized by the first checkpoint), one late. */
  const PATCH_AFTER = new Map([
    [1, 'notes/early.txt'],
    [9, 'notes/late.txt'],
  ]);
  const patchOf = (file: string) => `*** Begin Patch\n*** Add File: ${file}\n+checked ${file}\n*** End Patch\n`;
  const patchId = (file: string) => `call_codex_patch_${path.basename(file, '.txt')}`;

  it('runs codex exec with scripted shell calls and freeform apply_patch calls to the final answer; the checkpoint is in every forwarded input after the first compaction, custom tool calls stay paired, nothing forks, the history is exact', async () => {
    const session = uid('codex-cli');
    const work = mkdtempSync(path.join(tmpdir(), 'compactor-codex-work-'));
    try {
      mkdirSync(path.join(work, 'data'));
      const catMarkers = Array.from({ length: TOOL_TURNS }, (_, k) => `CODEX-PART-${String(k).padStart(2, '0')}-MARKER`);
      catMarkers.forEach((marker, k) => writeFileSync(path.join(work, 'data', `part-${String(k).padStart(2, '0')}.txt`), `${bigText(marker, 8_000)}\n`));
      const call = (k: number): FakeLlmToolCall => ({ id: `call_codex_${String(k).padStart(2, '0')}`, name: 'exec_command', input: { cmd: `cat data/part-${String(k).padStart(2, '0')}.txt` } });
      const turns: FakeLlmStep[] = [];
      // What each turn's result must hold: a cat's marker, or the file apply_patch added (Codex names it in its output).
      const markers: string[] = [];
      for (let k = 0; k < TOOL_TURNS; k++) {
        turns.push({ text: k === 0 ? 'Reading the parts one by one.' : '', toolCalls: [call(k)] });
        markers.push(catMarkers[k]);
        const file = PATCH_AFTER.get(k);
        if (file === undefined) continue;
        turns.push({ text: '', toolCalls: [{ id: patchId(file), name: 'apply_patch', input: patchOf(file), custom: true }] });
        markers.push(file);
      }
      turns.push({ text: FINAL });
      const notes: string[] = [];
      const loopHeader = `codex-${session}`;
      const run = fake.toolLoop({ match: (r) => r.headers['x-test-loop'] === loopHeader, turns: paced(session, turns, notes) });
      await http().post('/v1/sessions').set(auth()).send({ id: session, model: MODEL, contextWindow: WINDOW, policy: 'factor3' }).expect(201);
      const relay = await startRecordingRelay(`${base}/v1/proxy/openai/v1`);
      const before = fake.requests.length;
      let cli;
      try {
        cli = await runCodex({
          baseUrl: relay.url,
          cwd: work,
          prompt: `Read every file in ./data one at a time with cat and report whether the totals match.`,
          headers: { 'X-Compactor-Key': key, 'X-Compactor-Session': session, 'X-Test-Loop': loopHeader },
          model: MODEL,
          timeoutMs: 150_000,
        });
      } finally {
        await relay.close();
        run.stop();
      }
      const forwarded = fake.requests.slice(before).filter((r) => r.headers['x-test-loop'] === loopHeader);
      const proxied = relay.exchanges.filter((e) => e.method === 'POST' && e.url.startsWith('/responses'));
      const observed = proxied.map((e) => observedOf(e.status ?? 0, (n) => e.responseHeaders?.[n]));
      const extra = {
        cli: { exitCode: cli.exitCode, signal: cli.signal, durationMs: cli.durationMs, lastMessage: cli.lastMessage, stderr: cli.stderr.slice(-4000), stdout: cli.stdout.slice(-4000) },
        client: { requests: relay.exchanges.map((e) => ({ method: e.method, url: e.url, status: e.status, headers: e.requestHeaders, responseHeaders: e.responseHeaders, error: e.error })), firstBody: proxied[0]?.body },
      };
      const outcome: LoopOutcome = { session, run, observed, forwarded, notes, extra };
      capture(outcome);

      expect({ exitCode: cli.exitCode, lastMessage: cli.lastMessage?.trim(), proxyErrors: proxied.filter((e) => e.status !== 200).map((e) => `${e.status} ${e.responseBody?.slice(0, 500)}`) }).toEqual({
        exitCode: 0,
        lastMessage: FINAL,
        proxyErrors: [],
      });
      // Only the proxied Responses route: its own network features are off.
      expect(relay.exchanges.filter((e) => !e.url.startsWith('/responses')).map((e) => `${e.method} ${e.url}`)).toEqual([]);
      // Codex offered apply_patch as a freeform tool, ran both scripted patches, and sent their custom_tool_call_output items.
      expect((proxied[0]?.body as { tools?: Array<{ type: string; name?: string }> }).tools?.filter((t) => t.name === 'apply_patch').map((t) => t.type)).toEqual(['custom']);
      for (const file of PATCH_AFTER.values()) expect(readFileSync(path.join(work, file), 'utf8')).toBe(`checked ${file}\n`);
      await expectCompactedLoop(outcome, markers, { checkpoints: true });

      // Every forwarded input holds a custom call and its output together, the output after the call, or neither; each
      // pair reached the upstream as Codex sent it, and the early one left the context with the first compaction (together).
      type Item = { type?: string; call_id?: string; input?: string; name?: string };
      const customPairs = forwarded.map((r) => {
        const items = ((r.body as { input?: Item[] }).input ?? []).filter((i) => i.type === 'custom_tool_call' || i.type === 'custom_tool_call_output');
        return [...new Set(items.map((i) => i.call_id))].map((id) => {
          const callAt = items.findIndex((i) => i.type === 'custom_tool_call' && i.call_id === id);
          const outputAt = items.findIndex((i) => i.type === 'custom_tool_call_output' && i.call_id === id);
          return { id, paired: callAt >= 0 && outputAt > callAt, input: items[callAt]?.input };
        });
      });
      expect(customPairs.flat().filter((p) => !p.paired)).toEqual([]);
      for (const file of PATCH_AFTER.values()) {
        expect(customPairs.some((pairs) => pairs.some((p) => p.id === patchId(file) && p.input === patchOf(file)))).toBe(true);
      }
      const firstCompacted = observed.findIndex((o) => o.version >= 1);
      const early = patchId(PATCH_AFTER.get(1)!);
      const late = patchId(PATCH_AFTER.get(9)!);
      expect(customPairs.findIndex((pairs) => pairs.some((p) => p.id === late))).toBeGreaterThan(firstCompacted);
      expect(customPairs.slice(firstCompacted).every((pairs) => pairs.every((p) => p.id !== early))).toBe(true);

      // The history is exactly what was appended: the first request's items, then each answer's output items and the
      // items the next request added (the tool outputs), whatever the forwarded context held meanwhile.
      const inputs = proxied.map((e) => (e.body as { input: unknown[] }).input);
      const outputs = proxied.map((e) => completedOutput(e.responseBody));
      const expected: unknown[] = [...inputs[0]];
      inputs.forEach((input, k) => {
        expected.push(...outputs[k]);
        if (k + 1 < inputs.length) expected.push(...inputs[k + 1].slice(input.length + outputs[k].length));
      });
      const history = (await http().get(`/v1/sessions/${session}/messages?limit=500`).set(auth()).expect(200)).body as { messages: Array<{ message: CanonicalMessage }> };
      expect(toResponses(history.messages.map((m) => m.message))).toEqual(expected);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }, 200_000);
});

describe('the official SDKs through the proxy, with their own tool loops', () => {
  /**
   * A budget of about 22,500 tokens; each turn adds about 1,500 tokens for gpt-4o and 1,900 for Claude (a 4,000-character
   * file), so that two turns stay within the 20% between balanced's trigger and the budget (see the Claude Code test).
   */
  const WINDOW = 24_000;
  const MAX_TOKENS = 1_024;
  const TOOL_TURNS = 18;
  const FINAL = 'Every part is read.';
  const FILES = new Map(Array.from({ length: TOOL_TURNS }, (_, k) => [`docs/part-${k}.md`, bigText(`SDK-PART-${k}-MARKER`, 4_000)]));
  const markers = Array.from({ length: TOOL_TURNS }, (_, k) => `SDK-PART-${k}-MARKER`);
  const readFile = (file: string) => FILES.get(file) ?? `no such file: ${file}`;
  const turns = (prefix: string): FakeLlmStep[] => [
    ...Array.from({ length: TOOL_TURNS }, (_, k) => ({ text: k % 3 === 0 ? `Reading part ${k}.` : '', toolCalls: [{ id: `${prefix}_${k}`, name: 'read_file', input: { path: `docs/part-${k}.md` } }] })),
    { text: FINAL },
  ];

  async function createSession(session: string, model: string): Promise<void> {
    await http().post('/v1/sessions').set(auth()).send({ id: session, model, contextWindow: WINDOW, outputReserve: 1_000, policy: 'balanced' }).expect(201);
  }

  it.each([false, true])('@anthropic-ai/sdk tool runner (stream: %s)', async (stream) => {
    const session = uid(`anthropic-sdk-${stream ? 'stream' : 'json'}`);
    await createSession(session, 'claude-sonnet-4-5');
    const notes: string[] = [];
    const run = fake.toolLoop({ match: (r) => r.headers['x-test-loop'] === session, turns: paced(session, turns('toolu_sdk'), notes) });
    const observed: Observed[] = [];
    const before = fake.requests.length;
    const client = new Anthropic({
      apiKey: 'sk-ant-upstream',
      baseURL: `${base}/v1/proxy/anthropic`,
      defaultHeaders: { 'X-Compactor-Key': key, 'X-Compactor-Session': session, 'X-Test-Loop': session },
      maxRetries: 0,
      logLevel: 'off',
      fetch: observingFetch(observed),
    });
    const tool = betaTool({
      name: 'read_file',
      description: 'Reads a file of the project',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      run: ({ path: file }) => readFile(file),
    });
    let final: Anthropic.Beta.BetaMessage;
    try {
      // `thread: false`: the full history every turn (the runner's default, message threads, keeps the history on the provider's side).
      final = await client.beta.messages
        .toolRunner({ model: 'claude-sonnet-4-5', max_tokens: MAX_TOKENS, system: 'You are a careful agent.', messages: [{ role: 'user', content: 'Read every part in docs/.' }], tools: [tool], thread: false, stream, max_iterations: 30 })
        .runUntilDone();
    } finally {
      run.stop();
    }
    expect(final.content).toEqual([expect.objectContaining({ type: 'text', text: FINAL })]);
    const forwarded = fake.requests.slice(before).filter((r) => r.headers['x-test-loop'] === session);
    await expectCompactedLoop({ session, run, observed, forwarded, notes }, markers, { checkpoints: false });
  }, 90_000);

  it.each([false, true])('openai runTools (stream: %s)', async (stream) => {
    const session = uid(`openai-sdk-${stream ? 'stream' : 'json'}`);
    await createSession(session, 'gpt-4o');
    const notes: string[] = [];
    const run = fake.toolLoop({ match: (r) => r.headers['x-test-loop'] === session, turns: paced(session, turns('call_sdk'), notes) });
    const observed: Observed[] = [];
    const before = fake.requests.length;
    const client = new OpenAI({
      apiKey: 'sk-upstream',
      baseURL: `${base}/v1/proxy/openai/v1`,
      defaultHeaders: { 'X-Compactor-Key': key, 'X-Compactor-Session': session, 'X-Test-Loop': session },
      maxRetries: 0,
      fetch: observingFetch(observed),
    });
    const tools = [
      {
        type: 'function' as const,
        function: {
          name: 'read_file',
          description: 'Reads a file of the project',
          parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
          parse: JSON.parse,
          function: (args: { path: string }) => readFile(args.path),
        },
      },
    ];
    const params = { model: 'gpt-4o', max_tokens: MAX_TOKENS, messages: [{ role: 'system' as const, content: 'You are a careful agent.' }, { role: 'user' as const, content: 'Read every part in docs/.' }], tools };
    let content: string | null;
    try {
      content = stream
        ? await client.chat.completions.runTools({ ...params, stream: true }, { maxChatCompletions: 30 }).finalContent()
        : await client.chat.completions.runTools(params, { maxChatCompletions: 30 }).finalContent();
    } finally {
      run.stop();
    }
    expect(content).toBe(FINAL);
    const forwarded = fake.requests.slice(before).filter((r) => r.headers['x-test-loop'] === session);
    await expectCompactedLoop({ session, run, observed, forwarded, notes }, markers, { checkpoints: false });
  }, 90_000);
});
