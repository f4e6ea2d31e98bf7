// Rows as the repositories return them, for unit specs that mock the repositories (`@compactor/persistence/testing`):
// every field given, so a test overrides only what it is about. Here rather than in libs/testing, which the
// persistence int-specs import (a cycle); type-only imports, so nothing here reaches a database.
import type { JobRecord } from '../compaction.repository';
import type { SessionRecord } from '../session.repository';

const AT = new Date('2026-11-01T00:00:00Z');

/** A session of 40 messages (50,000 context tokens) on gpt-4o with the balanced preset, at version `version-3`. */
export function sessionRecord(overrides: Partial<SessionRecord> = {}): SessionRecord {
  return {
    id: 'session-1',
    tenantId: 'tenant-1',
    externalId: 'ext-1',
    model: 'gpt-4o',
    contextWindow: 128_000,
    outputReserve: 4_096,
    policy: { preset: 'balanced', overrides: {} },
    goal: null,
    headVersionId: 'version-3',
    lastSeq: 40,
    lastRole: 'assistant',
    openToolUseIds: [],
    historyTokens: 50_000,
    contextTokens: 50_000,
    systemTokens: 0,
    utilization: 0.4,
    compactions: 2,
    reliability: null,
    contextConfidence: null,
    requestMaxTokens: null,
    toolSchemaTokens: 0,
    calibration: 1,
    compactionHoldTokens: null,
    compactionHoldReason: null,
    compactionHoldAt: null,
    compactionHoldCount: 0,
    createdAt: AT,
    updatedAt: AT,
    lastActivityAt: AT,
    ...overrides,
  };
}

/** The running first attempt of a threshold compaction of `session-1`, created now. */
export function jobRecord(overrides: Partial<JobRecord> = {}): JobRecord {
  return {
    id: 'job-1',
    sessionId: 'session-1',
    tenantId: 'tenant-1',
    trigger: 'threshold',
    dryRun: false,
    status: 'running',
    reason: null,
    steps: [],
    tokensBefore: null,
    tokensAfter: null,
    llmCalls: 0,
    llmInputTokens: 0,
    llmOutputTokens: 0,
    llmCostUsd: '0',
    attempts: 1,
    durationMs: null,
    error: null,
    baseVersionId: 'version-3',
    resultVersionId: null,
    createdAt: new Date(),
    startedAt: new Date(),
    finishedAt: null,
    ...overrides,
  };
}
