import {
  assertBudgetAboveFloor,
  DEFAULT_PRESET,
  defaultOutputReserve,
  isPresetImplemented,
  PolicyInput,
  PRESET_NAMES,
  privilegedOverrides,
  RequestLimits,
  resolvePresetParams,
  sessionBudget,
  SessionBudgetFields,
  thresholdTokens,
  ValidationFailed,
  DomainError,
} from '@compactor/compaction';
import { ApiErrorCode } from '../errors/http-errors';
import { Prisma, SessionRecord } from '@compactor/persistence';
import { resolveModel } from '@compactor/tokens';
import { z } from 'zod';

export const UNKNOWN_MODEL = 'unknown';

export const policySchema = z
  .union([
    z.enum(PRESET_NAMES),
    z.strictObject({
      preset: z.enum(PRESET_NAMES),
      // Any value: every input here is JSON already (a parsed body or header, the JSONB column), and resolvePresetParams
      // below checks each override against the preset's parameters. (z.json() accepted the same values but documents
      // itself as a recursive schema that nestjs-zod copies into each request body's components.)
      overrides: z.record(z.string(), z.unknown()).optional(),
    }),
  ])
  // Named: the request bodies that take a policy share one OpenAPI component (the response shape is PolicyView).
  .meta({ id: 'PolicyInput', description: 'A preset name, or { preset, overrides } with overrides of that preset\'s parameters.' })
  .transform((p): PolicyInput => (typeof p === 'string' ? { preset: p, overrides: {} } : { preset: p.preset, overrides: p.overrides ?? {} }))
  .superRefine((policy, ctx) => {
    // Overrides are checked against the preset's own parameters: an unknown or mistyped one is a 400 naming it.
    if (!isPresetImplemented(policy.preset)) return;
    try {
      resolvePresetParams(policy);
    } catch (error) {
      if (!(error instanceof ValidationFailed)) throw error;
      for (const problem of error.problems) ctx.addIssue({ code: 'custom', path: problem.field.split('.').slice(1), message: problem.message });
    }
  });

/**
 * Prompt and summarizer-model overrides need an `admin` key (issue #15 item 3): they decide what
 * the operator's LLM key is asked and which model it pays for. A 403 names the fields.
 */
export function assertMayOverride(policy: PolicyInput | undefined, scopes: readonly string[], prefix = 'policy.overrides'): void {
  if (!policy || scopes.includes('admin')) return;
  const fields = privilegedOverrides(policy.overrides, prefix);
  if (fields.length === 0) return;
  throw new DomainError(ApiErrorCode.Forbidden, `${fields.join(', ')}: prompt and summarizer-model overrides need an admin key`, {
    fields: fields.map((field) => ({ field, message: 'needs an admin key' })),
  });
}

export const sessionConfigFields = {
  model: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
  contextWindow: z.number().int('must be an integer').min(1_024, 'must be at least 1024').max(100_000_000),
  outputReserve: z.number().int('must be an integer').min(0).max(10_000_000),
  policy: policySchema,
};

export interface ResolvedSessionConfig {
  model: string;
  contextWindow: number;
  outputReserve: number;
  policy: PolicyInput;
  warnings: string[];
}

/** Fills what the client left out from the model catalog; unknown models get the documented default and a warning. */
export function resolveSessionConfig(input: {
  model?: string;
  contextWindow?: number;
  outputReserve?: number;
  policy?: PolicyInput;
}): ResolvedSessionConfig {
  const warnings: string[] = [];
  const model = input.model ?? UNKNOWN_MODEL;
  const resolved = resolveModel(model);
  if (!input.model) warnings.push('No model given: tokens are estimated with the default model settings; set `model` for exact counts');
  else if (resolved.warning) warnings.push(resolved.warning);
  const contextWindow = input.contextWindow ?? resolved.spec.contextWindow;
  // SPEC.md "Budget": the default reserve is the model's maximum output, capped at 25% of the window.
  const outputReserve = input.outputReserve ?? defaultOutputReserve(resolved.spec.defaultOutputReserve, contextWindow);
  assertBudgetAboveFloor({ contextWindow, outputReserve });
  return {
    model,
    contextWindow,
    outputReserve,
    policy: input.policy ?? { preset: DEFAULT_PRESET, overrides: {} },
    warnings,
  };
}


/** A policy as the JSON the sessions table stores (it was validated by policySchema). */
export function policyJson(policy: PolicyInput): Prisma.InputJsonValue {
  return { preset: policy.preset, overrides: policy.overrides as Prisma.InputJsonObject };
}

/** The stored policy JSON back as a PolicyInput (it was validated when written). */
export function sessionPolicy(session: Pick<SessionRecord, 'policy'>): PolicyInput {
  return policySchema.parse(session.policy);
}

export interface SessionUsage {
  contextTokens: number;
  budget: number;
  available: number;
  utilization: number;
  threshold: number;
}

export function sessionUsage(
  session: SessionBudgetFields & Pick<SessionRecord, 'policy'>,
  contextTokens: number,
  systemTokens = session.systemTokens ?? 0,
  request?: RequestLimits,
  /** The session's policy when the caller parsed it already (an append parses it once). */
  policy: PolicyInput = sessionPolicy(session),
): SessionUsage {
  const budget = sessionBudget({ ...session, systemTokens }, request);
  return {
    contextTokens,
    budget: budget.budget,
    available: budget.available,
    utilization: budget.budget > 0 ? Math.round((contextTokens / budget.budget) * 1e6) / 1e6 : 1,
    threshold: thresholdTokens(budget, policy),
  };
}
