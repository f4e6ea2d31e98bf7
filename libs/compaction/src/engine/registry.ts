import { CanonicalMessage } from '../messages/canonical';
import { FieldProblem, ValidationFailed } from '../errors';
import { ParamLayer, resolveParams } from '../policy/params';
import { numberProblem } from '../policy/ranges';
import { PolicyInput, PresetName } from '../policy/presets';
import { BALANCED_DEFAULTS } from '../presets/balanced';
import { PRESET_DEFINITIONS } from '../presets';
import { ProtectionPolicy } from './protection';
import { PresetDefinition } from './preset';
import { CompactionInput, CompactionOutcome, CountMessage, SessionMessage } from './types';

// Parameters differ per preset; the registry hands each run the params its own defaults resolved to.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyPreset = PresetDefinition<any>;

/** The presets of SPEC.md's table whose stages the engine runs (libs/compaction/src/presets), by name. */
const PRESETS: Partial<Record<PresetName, AnyPreset>> = Object.fromEntries(PRESET_DEFINITIONS.map((p) => [p.name, p]));

export function presetDefinition(name: PresetName): AnyPreset | undefined {
  return PRESETS[name];
}

export function isPresetImplemented(name: string): boolean {
  return name in PRESETS;
}

/** Keys of a policy's overrides that configure the trigger, not the stages. */
const TRIGGER_KEYS = new Set(['triggerFraction', 'snapshotFraction']);

/**
 * The parameters a run uses: the preset's defaults, then the environment layer
 * (`COMPACTOR_COMPACT_*`, already mapped to parameter paths), then the session's overrides.
 * Throws `ValidationFailed` naming the field when an override is unknown or mistyped.
 */
export function resolvePresetParams(policy: PolicyInput, env: Record<string, unknown> = {}): object {
  const preset = PRESETS[policy.preset];
  if (!preset) throw new Error(`preset ${policy.preset} has no stages`);
  // A trigger key the preset does not declare configures only the scheduler (checked here); one it declares reaches its run too.
  const triggerProblems: FieldProblem[] = [];
  for (const key of TRIGGER_KEYS) {
    const value = policy.overrides?.[key];
    if (value === undefined || key in preset.defaults) continue;
    const problem = typeof value === 'number' && Number.isFinite(value) ? numberProblem(key, value) : 'must be a number';
    if (problem) triggerProblems.push({ field: `policy.overrides.${key}`, message: problem });
  }
  const overrides = Object.fromEntries(Object.entries(policy.overrides ?? {}).filter(([k]) => !TRIGGER_KEYS.has(k) || k in preset.defaults));
  const layers: ParamLayer[] = [
    { source: 'environment', values: env },
    { source: 'policy.overrides', values: overrides },
  ];
  let params: object;
  try {
    params = resolveParams(preset.defaults, ...layers);
  } catch (error) {
    // One 400 names every bad field: the scheduler keys' and the stages'.
    if (error instanceof ValidationFailed && triggerProblems.length > 0) throw new ValidationFailed([...triggerProblems, ...error.problems]);
    throw error;
  }
  if (triggerProblems.length > 0) throw new ValidationFailed(triggerProblems);
  return params;
}

/** Runs one compaction of the session's preset. */
export async function runPreset(policy: PolicyInput, input: CompactionInput, env: Record<string, unknown> = {}): Promise<CompactionOutcome> {
  const preset = PRESETS[policy.preset];
  if (!preset) throw new Error(`preset ${policy.preset} has no stages`);
  return preset.run(input, resolvePresetParams(policy, env));
}

/**
 * The protection policy a session's preset declares (Guarantee 3), for the read-time fallback of
 * Guarantee 4; `balanced`'s when the preset has none of its own or its overrides no longer validate.
 */
export function presetProtection(policy: PolicyInput): ProtectionPolicy {
  try {
    const params = resolvePresetParams(policy) as { protection?: Partial<ProtectionPolicy> };
    return { ...BALANCED_DEFAULTS.protection, ...(params.protection ?? {}) };
  } catch {
    return BALANCED_DEFAULTS.protection;
  }
}

/**
 * The preset's deterministic per-result step at ingest (SPEC.md "Policies": it applies whatever
 * the message's age), over messages no compaction has treated; `undefined` when the preset has
 * none. Steps that would store artifacts are not applied here: only rewrites the history can
 * always re-derive. Returns the messages, each in its context form (same objects when unchanged).
 */
export function ingestTransform(policy: PolicyInput): ((m: SessionMessage, count: CountMessage, names: ReadonlyMap<string, string>) => SessionMessage) | undefined {
  const preset = PRESETS[policy.preset];
  if (!preset?.ingest) return undefined;
  const step = preset.ingest;
  let params: object;
  try {
    params = resolvePresetParams(policy);
  } catch {
    return undefined;
  }
  return (m, count, names) => {
    const r = step(m, params, count, names);
    return r && r.artifacts.length === 0 && r.message.tokens < m.tokens ? r.message : m;
  };
}


/**
 * Whether appended messages call for an `ingest` run of the preset's per-result steps that store
 * or summarize (SPEC.md "Policies"; each preset says so with `needsIngestRun`: `balanced` offloads
 * a result above `offloadAboveTokens`, `two-layer` (seed 002) summarizes one over
 * `singleResultThreshold` characters). Until it finishes, reads use Guarantee 4's fallback.
 */
export function needsIngestRun(policy: PolicyInput, messages: readonly CanonicalMessage[], tokens: readonly number[]): boolean {
  const needs = PRESETS[policy.preset]?.needsIngestRun;
  if (!needs) return false;
  let params: object;
  try {
    params = resolvePresetParams(policy);
  } catch {
    return false;
  }
  return messages.some((m, i) => m.blocks.some((b) => b.type === 'tool_result') && needs(m, tokens[i], params));
}
