import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The real SWE-agent sessions of testdata/ (OpenAI-shaped message histories). */
export const SWE_AGENT_DIR = path.resolve(__dirname, '../../../testdata/swe-agent-trajectories');

/** The trajectory files, in name order. */
export function sweAgentFiles(): string[] {
  return readdirSync(SWE_AGENT_DIR)
    .filter((f) => f.endsWith('.traj'))
    .sort();
}

/** One trajectory's message history, as recorded. */
export function loadSweAgentHistory(file: string): Record<string, unknown>[] {
  return JSON.parse(readFileSync(path.join(SWE_AGENT_DIR, file), 'utf8')).history as Record<string, unknown>[];
}

/**
 * A long real session: the five SWE-agent runs one after another, as one agent taking task
 * after task (~55,000 tokens; the system prompt of the first run only).
 */
export function longSweAgentSession(): Record<string, unknown>[] {
  return sweAgentFiles().flatMap((f, i) => loadSweAgentHistory(f).filter((m) => i === 0 || m.role !== 'system'));
}
