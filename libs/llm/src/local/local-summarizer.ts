/**
 * `local`: the offline, deterministic summarizer (SPEC.md "LLM providers"). Extractive: it
 * keeps decisions, constraints, file paths, identifiers, errors, commands, numbers and open
 * tasks, ranks the rest, and fills the target. No model, no network, no clock, no randomness:
 * the same request always gives the same text (Guarantee 8).
 */
import {
  type CanonicalMessage,
  LlmError,
  renderTranscript,
  type SummarizeRequest,
  type SummarizeResult,
  type Summarizer,
} from '@compactor/compaction';
import { countTextSync, type Encoding } from '@compactor/tokens';
import { choose, type ComposeOptions, rank, render, truncateToTokens } from './compose';
import { Extractor, normalizeWhitespace } from './extract';
import type { Unit } from './unit';
import { compactSections, detectSections, routeSections, wantsSummaryTag } from './structure';
import { condenseToolOutput } from './tool-output';
import { withoutBracketHeader } from './line-scan';

export const LOCAL_SUMMARIZER_PROVIDER = 'local';
export const LOCAL_SUMMARIZER_MODEL = 'extractive-v1';
export const LOCAL_DEFAULT_CONTEXT_WINDOW = 128_000;
/** A summary never exceeds this multiple of its target. */
export const LOCAL_HARD_CAP_FACTOR = 1.25;

export interface LocalSummarizerOptions {
  /** Tokens the summarizer reads in one call; larger spans are chunked by the stages. Default 128,000. */
  contextWindow?: number;
  /** Encoding the targets are measured in. Default `o200k_base`. */
  encoding?: Encoding;
}

const SUMMARY_TAG = '[SUMMARY]';

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new LlmError('aborted', 'local summarizer: the request was aborted', 1);
}

function toolResultText(block: Extract<CanonicalMessage['blocks'][number], { type: 'tool_result' }>): string {
  return typeof block.content === 'string' ? block.content : block.content.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

/** The plain text of a tool-result request: text and tool results in order, tool calls as one line. */
function toolOutputOf(messages: CanonicalMessage[]): { text: string; isError: boolean } {
  const parts: string[] = [];
  let isError = false;
  for (const m of messages) {
    for (const b of m.blocks) {
      if (b.type === 'text') parts.push(b.text);
      else if (b.type === 'tool_result') {
        parts.push(toolResultText(b));
        isError ||= b.isError;
      } else if (b.type === 'tool_use') parts.push(`[tool call ${b.name} ${b.argumentsText ?? JSON.stringify(b.input)}]`);
    }
  }
  return { text: parts.join('\n'), isError };
}

/** The input itself, whitespace-normalized: what a request whose input already fits gets back. */
function normalizedCopy(request: SummarizeRequest): string {
  if (request.kind === 'tool-result') return normalizeWhitespace(toolOutputOf(request.messages).text);
  if (request.kind === 'merge') {
    const texts = request.messages.flatMap((m) => m.blocks.flatMap((b) => (b.type === 'text' ? [withoutBracketHeader(b.text)] : [])));
    return normalizeWhitespace(texts.join('\n\n'));
  }
  return normalizeWhitespace(renderTranscript(request.messages));
}

export class LocalSummarizer implements Summarizer {
  readonly provider = LOCAL_SUMMARIZER_PROVIDER;
  readonly model = LOCAL_SUMMARIZER_MODEL;
  readonly deterministic = true;
  readonly contextWindow: number;
  private readonly encoding: Encoding;

  constructor(options: LocalSummarizerOptions = {}) {
    this.contextWindow = options.contextWindow ?? LOCAL_DEFAULT_CONTEXT_WINDOW;
    this.encoding = options.encoding ?? 'o200k_base';
  }

  async summarize(request: SummarizeRequest, signal?: AbortSignal): Promise<SummarizeResult> {
    throwIfAborted(signal);
    const count = (text: string) => countTextSync(text, this.encoding);
    const target = Number.isFinite(request.targetTokens) ? Math.max(1, Math.floor(request.targetTokens)) : 1;
    const hardCap = Math.max(1, Math.floor(target * LOCAL_HARD_CAP_FACTOR));
    const transcript = renderTranscript(request.messages);
    const transcriptTokens = count(transcript);
    const inputTokens = transcriptTokens + count(request.instructions) + (request.goal ? count(request.goal) : 0);
    throwIfAborted(signal);

    // Never longer than the input, never over the hard cap.
    const limit = Math.max(1, Math.min(hardCap, transcriptTokens));
    const copy = normalizedCopy(request);
    // Counting a copy that cannot fit is the costliest step of a large request: skip it (no token spans 8 characters on average).
    const copyTokens = copy && (transcriptTokens <= target || copy.length / 8 <= target) ? count(copy) : Infinity;
    let text: string;
    if (copy && copyTokens <= target && copyTokens <= transcriptTokens) {
      text = copy;
      if (request.kind !== 'tool-result' && wantsSummaryTag(request.instructions) && count(`${SUMMARY_TAG}\n${copy}`) <= limit) text = `${SUMMARY_TAG}\n${copy}`;
    } else if (request.kind === 'tool-result') {
      const { isError } = toolOutputOf(request.messages);
      text = condenseToolOutput(copy, isError, Math.min(target, limit), count);
    } else {
      text = this.extractive(request, target, limit, count, signal);
    }

    if (count(text) > limit) text = truncateToTokens(text, limit, count);
    if (!text.trim() && transcript.trim()) text = truncateToTokens(copy.trim() ? copy : transcript, limit, count);
    if (!text.trim() && transcript.trim()) text = truncateToTokens(transcript, limit, count);
    return {
      text,
      usage: { inputTokens, outputTokens: text ? count(text) : 0, costUsd: 0 },
      provider: this.provider,
      model: this.model,
      attempts: 1,
    };
  }

  /** checkpoint, chunk and merge: extract, rank, fill the target, render in the requested shape. */
  private extractive(request: SummarizeRequest, target: number, limit: number, count: (t: string) => number, signal?: AbortSignal): string {
    const kind = request.kind === 'merge' ? 'merge' : request.kind === 'chunk' ? 'chunk' : 'checkpoint';
    const maxUnitChars = Math.min(320, Math.max(80, Math.round(target * 1.2)));
    const units = new Extractor({ kind, goal: request.goal, maxUnitChars, checkAbort: () => throwIfAborted(signal) }).run(request.messages);
    throwIfAborted(signal);
    if (units.length === 0) return '';

    const prefix = wantsSummaryTag(request.instructions) ? SUMMARY_TAG : undefined;
    const headings = detectSections(request.instructions);
    const budget = Math.min(target, limit);
    let options: ComposeOptions = { sections: compactSections(), allSections: false, prefix, categoryShare: 0.35 };
    if (headings) {
      const sections = routeSections(headings);
      const headingTokens = sections.reduce((n, s) => n + count(`${s.heading}\n`), 0) + (prefix ? count(`${prefix}\n`) : 0);
      const placeholderTokens = sections.length * count('- (none)\n');
      if (headingTokens + placeholderTokens <= budget * 0.6) options = { ...options, sections, allSections: true, placeholder: '(none)' };
      else if (headingTokens <= budget * 0.85) options = { ...options, sections, allSections: true };
    }
    if (kind === 'merge') options.first = ['constraint', 'decision'];

    const chosen = choose(units, budget, count, options);
    let text = render(chosen, options);
    // The per-line counts approximate the whole; the whole is what must fit.
    while (chosen.length > 0 && count(text) > limit) {
      let worst = 0;
      for (let i = 1; i < chosen.length; i++) if (chosen[i].score < chosen[worst].score) worst = i;
      chosen.splice(worst, 1);
      text = render(chosen, options);
    }
    if (chosen.length === 0) return this.smallest(units, limit, count, prefix);
    return text;
  }

  /** When not even one full item fits: the best one, cut to the limit. */
  private smallest(units: Unit[], limit: number, count: (t: string) => number, prefix?: string): string {
    const best = rank(units)[0];
    const tagged = prefix ? `${prefix} ${best.text}` : best.text;
    return truncateToTokens(count(tagged) <= limit || !prefix ? tagged : best.text, limit, count);
  }
}
