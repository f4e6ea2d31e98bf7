/**
 * The range of every preset parameter (issue #15 item 3). A session's overrides are set by any
 * `ingest` key, so a value outside what the preset was built for is refused, not run: `two-layer`
 * with `chunkSize: 100` once turned a 1 MB result into 10,001 summarizer calls. The ranges follow
 * what each parameter means (a fraction of the budget lies in 0..1, a chunk is at least 2,000
 * characters, a token count at most the largest context window), and hold for the environment
 * layer too. A preset parameter without a range here fails `ranges.spec.ts`.
 *
 * Prompts (any `*instructions` parameter) and the summarizer `model` are privileged: they decide
 * what the operator's LLM key is asked and which model it pays for, so only an `admin` key may
 * override them (`privilegedOverrides`).
 */
export interface NumberRange {
  min: number;
  max: number;
  integer: boolean;
}

const int = (min: number, max: number): NumberRange => ({ min, max, integer: true });
const real = (min: number, max: number): NumberRange => ({ min, max, integer: false });

/** The largest context window in the model catalog is 10M tokens; no token count needs more. */
const TOKENS = 10_000_000;
const FRACTION = real(0, 1);

/** By parameter path (`protection.latestMessages`, `postprocess.fileHeadLines`). */
export const NUMBER_RANGES: Readonly<Record<string, NumberRange>> = {
  // Scheduler keys, valid on every preset.
  triggerFraction: real(0.05, 1),
  snapshotFraction: FRACTION,
  // Protection (Guarantee 3).
  'protection.latestMessages': int(0, 1_000),
  'protection.latestUserTexts': int(0, 1_000),
  // balanced
  offloadAboveTokens: int(500, TOKENS),
  maskKeepLatestTurns: int(0, 10_000),
  maskMinTokens: int(0, TOKENS),
  summarizeAbove: FRACTION,
  summarizeDownTo: FRACTION,
  checkpointFraction: FRACTION,
  checkpointsMaxFraction: FRACTION,
  ledgerFraction: FRACTION,
  ledgerMaxFraction: FRACTION,
  minSavingFraction: FRACTION,
  minSavingTokens: int(0, TOKENS),
  // checkpoint-aging (seed 004): each tier's summary size.
  preserveRecentTokens: int(0, TOKENS),
  recentTokens: int(50, 100_000),
  oldTokens: int(50, 100_000),
  ancientTokens: int(50, 100_000),
  ultraTokens: int(50, 100_000),
  // factor3 (seed 000)
  constraintMaxChars: int(0, 100_000),
  summaryTargetTokens: int(100, 100_000),
  'postprocess.keepBelowTokens': int(0, TOKENS),
  'postprocess.keepStructuredBelowTokens': int(0, TOKENS),
  'postprocess.fileReadMaxLines': int(1, 1_000_000),
  'postprocess.fileHeadLines': int(0, 100_000),
  'postprocess.fileTailLines': int(0, 100_000),
  'postprocess.fileOutlineMax': int(0, 100_000),
  'postprocess.databaseMaxRows': int(1, 1_000_000),
  'postprocess.databaseSampleRows': int(0, 100_000),
  'postprocess.webSnippetChars': int(0, 100_000),
  'postprocess.apiMaxFields': int(1, 10_000),
  'postprocess.apiMaxValueChars': int(1, 1_000_000),
  // offload-compact (seed 003)
  triggerThreshold: int(0, TOKENS),
  targetTokens: int(500, TOKENS),
  preserveCount: int(0, 10_000),
  retryCount: int(0, 10),
  offloadMinTokens: int(0, TOKENS),
  // two-layer (seed 002): sizes in characters; a chunk under 2,000 characters multiplies LLM calls.
  contextLimit: int(0, TOKENS),
  singleResultThreshold: int(2_000, 1_000_000_000),
  chunkSize: int(2_000, 10_000_000),
  compressionRatio: real(0.01, 1),
  globalCompressionThreshold: real(0.05, 1),
  resultCompressionMinSize: int(0, 1_000_000_000),
  fallbackChars: int(0, 1_000_000),
};

/** Lists (tool names, tags, phrases): at most this many entries of at most this many characters. */
export const LIST_MAX_ENTRIES = 100;
export const LIST_ENTRY_MAX_CHARS = 200;
/** A prompt override (admins only) and any other string parameter. */
export const PROMPT_MAX_CHARS = 20_000;
export const STRING_MAX_CHARS = 200;

/** Whether the parameter at that path is a prompt or the summarizer model (admins only). */
export function isPrivilegedParam(path: string): boolean {
  const key = path.slice(path.lastIndexOf('.') + 1).toLowerCase();
  return key === 'model' || key.endsWith('instructions');
}

/** What is wrong with a number for that parameter path, or undefined when it is in range. */
export function numberProblem(path: string, value: number): string | undefined {
  const range = NUMBER_RANGES[path];
  if (!range) return undefined;
  if (range.integer && !Number.isInteger(value)) return 'must be an integer';
  if (value < range.min || value > range.max) return `must be ${range.min}..${range.max}`;
  return undefined;
}

/** What is wrong with a string for that parameter path, or undefined. */
export function stringProblem(path: string, value: string): string | undefined {
  const max = isPrivilegedParam(path) ? PROMPT_MAX_CHARS : STRING_MAX_CHARS;
  return value.length > max ? `must be at most ${max} characters` : undefined;
}

/** What is wrong with a list of strings, or undefined. */
export function listProblem(value: readonly string[]): string | undefined {
  if (value.length > LIST_MAX_ENTRIES) return `must have at most ${LIST_MAX_ENTRIES} entries`;
  if (value.some((s) => s.length > LIST_ENTRY_MAX_CHARS)) return `entries must be at most ${LIST_ENTRY_MAX_CHARS} characters`;
  return undefined;
}

const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The override paths (`policy.overrides.instructions`) that only an `admin` key may set. */
export function privilegedOverrides(overrides: Record<string, unknown>, prefix = 'policy.overrides'): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(overrides)) {
    const path = `${prefix}.${key}`;
    if (isPlain(value)) out.push(...privilegedOverrides(value, path));
    else if (isPrivilegedParam(key)) out.push(path);
  }
  return out;
}
