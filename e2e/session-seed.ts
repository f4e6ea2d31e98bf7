import { expect, type BrowserContext } from '@playwright/test';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { API_URL, DASHBOARD_URL, E2E_API_KEY } from './stack';

// Seeds sessions for the Sessions and Session pages through the public API, as an agent would:
// real SWE-agent trajectories appended in batches, with a small window so the worker compacts.

const DATA = resolve(__dirname, '../testdata/swe-agent-trajectories');
const load = (file: string) => (JSON.parse(readFileSync(resolve(DATA, file), 'utf8')) as { history: Record<string, unknown>[] }).history;

/** The five SWE-agent runs one after another (~55,000 tokens; the first run's system prompt only). */
export const LONG: Record<string, unknown>[] = readdirSync(DATA)
  .filter((f) => f.endsWith('.traj'))
  .sort()
  .flatMap((f, i) => (i === 0 ? load(f) : load(f).filter((m) => m.role !== 'system')));

/** 16,000-token window, 2,000 reserved: a budget of 13,680 tokens, so real compactions run after ~40 messages. */
export const SMALL_WINDOW = { model: 'gpt-4o', contextWindow: 16_000, outputReserve: 2_000 } as const;

export const API_KEY_COOKIE = 'compactor_api_key';

/** A session id no other test uses. */
export function uniqueId(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;
}

/** Puts the key into the browser the way Settings does: an httpOnly, SameSite=Strict cookie the page's JavaScript cannot read. */
export async function useApiKey(context: BrowserContext, key = E2E_API_KEY, url = DASHBOARD_URL): Promise<void> {
  await context.addCookies([{ name: API_KEY_COOKIE, value: key, url, httpOnly: true, sameSite: 'Strict' }]);
}

/** One call to the public API with the e2e tenant's key; fails the test with the API's own error text. */
export async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const response = await fetch(`${API_URL}${path}`, {
    method: init.method ?? 'GET',
    headers: { Authorization: `Bearer ${E2E_API_KEY}`, 'content-type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${path} → HTTP ${response.status}: ${text.slice(0, 500)}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

export interface Job {
  id: string;
  status: 'queued' | 'running' | 'succeeded' | 'skipped' | 'failed';
  reason: string | null;
}

/** Waits (polling the API) until the worker has finished a job. */
export async function finished(jobId: string): Promise<Job> {
  let job: Job | undefined;
  await expect
    .poll(
      async () => {
        job = await api<Job>(`/v1/jobs/${jobId}`);
        return job.status;
      },
      { message: `job ${jobId} to finish`, timeout: 30_000, intervals: [100, 200, 250] },
    )
    .toMatch(/^(succeeded|skipped|failed)$/);
  return job as Job;
}

interface Appended {
  lastSeq: number;
  compaction: { scheduled: boolean; jobId?: string };
}

/**
 * Appends LONG in batches of 8 until `compactions` compactions have succeeded in the worker.
 * Large tool outputs are offloaded (offloadAboveTokens) so the page has masked, offloaded and
 * summarized messages to show. Returns the succeeded jobs in order and how far it appended.
 */
export async function seedCompactedSession(id: string, compactions = 2, options: { untilOffloaded?: boolean } = {}): Promise<{ jobs: string[]; appended: number }> {
  const jobs: string[] = [];
  let offloaded = !options.untilOffloaded;
  let i = 0;
  // `untilOffloaded`: go on until the context also holds an offloaded output (the first large results come after a few compactions).
  for (; i < LONG.length && (jobs.length < compactions || !offloaded); i += 8) {
    const res = await api<Appended>(`/v1/sessions/${id}/messages`, {
      method: 'POST',
      body: { ...SMALL_WINDOW, policy: { preset: 'balanced', overrides: { offloadAboveTokens: 800 } }, format: 'openai', messages: LONG.slice(i, i + 8) },
    });
    if (res.compaction.scheduled && res.compaction.jobId) {
      const job = await finished(res.compaction.jobId);
      if (job.status === 'succeeded') jobs.push(job.id);
      if (!offloaded && job.status === 'succeeded') {
        const ctx = await api<{ contextVersion: number }>(`/v1/sessions/${id}/context?format=canonical`);
        const diff = await api<{ messages: { offloaded: unknown[] } }>(`/v1/sessions/${id}/versions/0/diff/${ctx.contextVersion}`);
        offloaded = diff.messages.offloaded.length > 0;
      }
    }
  }
  if (!offloaded) throw new Error(`no offloaded output in ${id} after ${jobs.length} compactions`);
  if (jobs.length < compactions) throw new Error(`only ${jobs.length} of ${compactions} compactions succeeded for ${id}`);
  return { jobs, appended: i };
}

/**
 * 24 messages (about half the budget): no compaction yet. The policy summarizes down to 30% of the
 * budget, so a manual "Compact now" really summarizes instead of being skipped as too small.
 * `overrides` adds to that policy (e.g. a small ledgerFraction, so the Facts section must leave entries out).
 */
export async function seedQuietSession(id: string, messages = 24, overrides: Record<string, unknown> = {}): Promise<void> {
  for (let i = 0; i < messages; i += 8) {
    const res = await api<Appended>(`/v1/sessions/${id}/messages`, {
      method: 'POST',
      body: {
        ...SMALL_WINDOW,
        policy: { preset: 'balanced', overrides: { summarizeAbove: 0.3, summarizeDownTo: 0.3, ...overrides } },
        format: 'openai',
        messages: LONG.slice(i, Math.min(i + 8, messages)),
      },
    });
    expect(res.compaction.scheduled, `append ${i} of ${id} stays below the trigger line`).toBe(false);
  }
}

/** A session with a few short messages (for the Sessions table). */
export async function seedSmallSession(id: string): Promise<void> {
  await api(`/v1/sessions/${id}/messages`, {
    method: 'POST',
    body: {
      ...SMALL_WINDOW,
      format: 'openai',
      messages: [
        { role: 'system', content: 'You are a careful coding agent.' },
        { role: 'user', content: `Task for ${id}: list the files.` },
      ],
    },
  });
}

export interface UsageSeries {
  points: { seq: number; kind: 'append' | 'compaction' | 'restore'; contextTokens: number; compaction?: { jobId: string } }[];
  budget: number;
  threshold: number;
  contextTokens: number;
}

export interface SessionView {
  id: string;
  messageCount: number;
  compactions: number;
  usage: { contextTokens: number; budget: number; threshold: number };
  reliability: { score: number; level: string; emoji: string; label: string; warning?: string | null; factors: Record<'modelFactor' | 'compressionPenalty' | 'contextConfidence', number> };
}

export interface ContextView {
  contextVersion: number | null;
  messages: unknown[];
  seqs?: number[];
  tokens: number;
}
