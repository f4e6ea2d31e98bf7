import { Block, CanonicalMessage, ToolResultBlock, ToolResultContent } from '../messages/canonical';
import { IngestStep } from './preset';
import { Protection, ProtectionPolicy } from './protection';
import { CountMessage, SessionMessage } from './types';
import { ArtifactOutput, contentId, Treatment } from './version';
import { placeholderKeys } from '../ledger/placeholder';
import { trimLineColumn, trimTrailing } from './text-scan';

/**
 * The offload stage (seed 003's "卸载", SPEC.md "Artifact"): a bulky tool result is stored
 * byte-exact as an artifact and replaced in the context by a reference plus a short digest
 * that says how to read it back (`GET /v1/artifacts/:id`, or the `compactor_read_artifact`
 * tool an agent can add to its tools). The tool_result block stays with its id and error flag,
 * so every tool pair is intact (Guarantee 2); the history keeps the original (Guarantee 1).
 */

export const READ_ARTIFACT_TOOL_NAME = 'compactor_read_artifact';
/** Characters returned by one read when the caller gives no `limit`. */
export const READ_ARTIFACT_DEFAULT_LIMIT = 20_000;
export const READ_ARTIFACT_MAX_LIMIT = 200_000;
/** Every offload reference starts with this, so a stage never offloads a reference again. */
export const OFFLOAD_MARKER = '[offloaded tool output';

const READ_ARTIFACT_DESCRIPTION = [
  'Read a tool output that Compactor offloaded from the conversation to save context space.',
  'The conversation shows such outputs as "[offloaded tool output: …]" with an artifact id (art_…) and a digest.',
  `Returns the stored output byte-exact, as a slice of characters: \`offset\` (default 0) and \`limit\` (default ${READ_ARTIFACT_DEFAULT_LIMIT.toLocaleString('en-US')}, at most ${READ_ARTIFACT_MAX_LIMIT.toLocaleString('en-US')});`,
  'the answer gives the total size and the next offset when more remains.',
].join(' ');

const READ_ARTIFACT_SCHEMA = {
  type: 'object',
  properties: {
    artifactId: { type: 'string', description: 'The artifact id named in the reference, e.g. art_0123456789abcdef0123.', pattern: '^art_[0-9a-f]{20}$' },
    offset: { type: 'integer', minimum: 0, description: 'First character to return (0-based). Default 0.' },
    limit: { type: 'integer', minimum: 1, maximum: READ_ARTIFACT_MAX_LIMIT, description: `How many characters to return. Default ${READ_ARTIFACT_DEFAULT_LIMIT}.` },
  },
  required: ['artifactId'],
  additionalProperties: false,
} as const;

/** The published tool definition (Anthropic Messages `tools[]` shape: name, description, input_schema). */
export const READ_ARTIFACT_TOOL = {
  name: READ_ARTIFACT_TOOL_NAME,
  description: READ_ARTIFACT_DESCRIPTION,
  input_schema: READ_ARTIFACT_SCHEMA,
} as const;

/** The same tool in OpenAI Chat Completions `tools[]` shape. */
export const READ_ARTIFACT_TOOL_OPENAI = {
  type: 'function',
  function: { name: READ_ARTIFACT_TOOL_NAME, description: READ_ARTIFACT_DESCRIPTION, parameters: READ_ARTIFACT_SCHEMA },
} as const;

export interface ArtifactSlice {
  content: string;
  offset: number;
  totalChars: number;
  /** Where the next read starts, or null when this slice reaches the end. */
  nextOffset: number | null;
}

/** One read of an artifact (`GET /v1/artifacts/:id?offset=&limit=` and the tool): never splits a surrogate pair. */
export function readArtifactSlice(content: string, offset = 0, limit = READ_ARTIFACT_DEFAULT_LIMIT): ArtifactSlice {
  const start = Math.min(Math.max(0, Math.floor(offset)), content.length);
  let end = Math.min(content.length, start + Math.max(1, Math.min(READ_ARTIFACT_MAX_LIMIT, Math.floor(limit))));
  const code = content.charCodeAt(end - 1);
  if (end < content.length && code >= 0xd800 && code <= 0xdbff) end += 1;
  return { content: content.slice(start, end), offset: start, totalChars: content.length, nextOffset: end < content.length ? end : null };
}

/** What an artifact stores for a tool result: a string content as is, an array of parts as their JSON. */
export function artifactContent(content: ToolResultContent): string {
  return typeof content === 'string' ? content : JSON.stringify(content);
}

const contentText = (content: ToolResultContent): string =>
  typeof content === 'string' ? content : content.map((p) => (p.type === 'text' ? p.text : '')).filter((t) => t.length > 0).join('\n');

const fmt = (n: number) => n.toLocaleString('en-US');
const clip = (line: string, max = 120) => {
  const t = line.trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};

const ERROR_LINE = /\b(error|errors|exception|traceback|failed|failure|fatal|panic|denied|not found)\b/i;
const FILE_EXT = /^[\w.-]+\.(py|ts|tsx|js|jsx|mjs|cjs|json|md|go|rs|java|kt|c|h|cc|cpp|hpp|cs|rb|php|sh|yml|yaml|toml|ini|cfg|txt|html|css|sql|xml|lock)$/;

/** The separators between pathsIn's tokens. */
const PATH_TOKEN_SEPARATOR = /[\s"'`()[\]{}<>,;=]+/g;

/**
 * Path-like tokens, in order of first appearance: with a slash (not a URL), or a file name with a known extension.
 * The tokens are taken one by one (not `text.split`): a 30 MB output is not copied into an array of its tokens, and the
 * scan stops at the `max`th path.
 */
function pathsIn(text: string, max: number): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const separator = PATH_TOKEN_SEPARATOR; // lastIndex is set before each exec (synchronous)
  let start = 0;
  while (out.length < max) {
    separator.lastIndex = start;
    const m = separator.exec(text);
    const end = m ? m.index : text.length;
    const token = trimTrailing(trimLineColumn(text.slice(start, end)), '.:');
    if (token.length >= 3 && token.length <= 120 && !token.includes('://') && !seen.has(token)) {
      const pathLike = /^[\w.~/-]+$/.test(token) && /[\w]\/[\w.]|^\/[\w.]/.test(token) && /[A-Za-z]/.test(token);
      if (pathLike || FILE_EXT.test(token)) {
        seen.add(token);
        out.push(token);
      }
    }
    if (!m) break;
    start = m.index + m[0].length;
  }
  return out;
}

/**
 * A short, deterministic description of an output (a few hundred characters whatever its size):
 * size, first and last lines, lines that report errors, and the paths it names.
 */
export function offloadDigest(content: ToolResultContent): string {
  const text = contentText(content);
  const out: string[] = [];
  if (typeof content !== 'string') {
    const images = content.filter((p) => p.type === 'image').length;
    const others = content.filter((p) => p.type === 'opaque').length;
    const parts = [`${content.length} part(s)`, images ? `${images} image(s)` : '', others ? `${others} other block(s)` : ''].filter(Boolean);
    out.push(`parts: ${parts.join(', ')}`);
  }
  // One pass over the lines, without an array of them (a 30 MB output has hundreds of thousands): the first three
  // non-empty lines, the last three after those, and the error lines that are neither.
  const head: (readonly [string, number])[] = [];
  let last: (readonly [string, number, boolean])[] = [];
  let nonEmpty = 0;
  let errorCount = 0;
  const firstErrors: (readonly [string, number])[] = [];
  for (let start = 0, i = 0; start <= text.length; i++) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl;
    const l = text.slice(start, end);
    if (l.trim().length > 0) {
      if (nonEmpty < 3) head.push([l, i]);
      else {
        const error = ERROR_LINE.test(l);
        if (error) {
          errorCount++;
          if (firstErrors.length < 6) firstErrors.push([l, i]);
        }
        last = last.length < 3 ? [...last, [l, i, error]] : [last[1], last[2], [l, i, error]];
      }
      nonEmpty++;
    }
    if (nl < 0) break;
    start = nl + 1;
  }
  // The last three non-empty lines (never one of the first three) are shown, so they are no error lines of their own.
  const tail = last;
  const tailLines = new Set(tail.map(([, i]) => i));
  const errors = firstErrors.filter(([, i]) => !tailLines.has(i));
  errorCount -= tail.filter(([, , error]) => error).length;
  if (head.length) out.push(`first lines: ${head.map(([l]) => clip(l)).join(' ⏎ ')}`);
  if (tail.length) out.push(`last lines: ${tail.map(([l]) => clip(l)).join(' ⏎ ')}`);
  if (errorCount) out.push(`error lines (${errorCount}): ${errors.slice(0, 3).map(([l, i]) => `${i + 1}: ${clip(l, 100)}`).join(' ⏎ ')}`);
  const paths = pathsIn(text, 6);
  if (paths.length) out.push(`paths: ${paths.join(', ')}`);
  return out.join('\n');
}

/** `text.split('\n').length`, without the array. */
function lineCount(text: string): number {
  let n = 1;
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) n++;
  return n;
}

/** The text that replaces an offloaded output in the context. */
export function offloadReference(args: { id: string; toolName: string; content: ToolResultContent; tokens: number; isError: boolean }): string {
  const text = artifactContent(args.content);
  const lines = lineCount(contentText(args.content));
  const head = `${OFFLOAD_MARKER}: ${args.toolName}${args.isError ? ' (error)' : ''}, ${fmt(lines)} lines, ${fmt(text.length)} chars, ~${fmt(args.tokens)} tokens]`;
  const how = `Stored as artifact ${args.id}. Read it with GET /v1/artifacts/${args.id} or the tool ${READ_ARTIFACT_TOOL_NAME} {"artifactId":"${args.id}"} (offset/limit in characters).`;
  const digest = offloadDigest(args.content);
  // The digest names the paths already.
  const keys = placeholderKeys(text, { paths: false });
  const withKeys = keys ? `${head}\n${how}\nKeys in it: ${keys}` : `${head}\n${how}`;
  return digest ? `${withKeys}\nDigest:\n${digest}` : withKeys;
}

const isReference = (content: ToolResultContent) =>
  typeof content === 'string' && (content.startsWith(OFFLOAD_MARKER) || content.startsWith('[masked tool output'));

/** Tokens of one result block, counted as a message holding only it (the caller's counter). */
const resultTokens = (block: ToolResultBlock, count: CountMessage) => count({ role: 'user', blocks: [block] });

/**
 * Whether a result block has more than `limit` tokens, without counting a text that is surely above
 * it (counting a 30 MB result holds the thread for seconds, twice per offload before): no token of
 * o200k_base or cl100k_base is longer than 128 bytes and an estimated model's multiplier is at least
 * 0.5 (MULTIPLIER_RANGE), so every 256 UTF-16 code units of text are at least one counted token.
 */
const resultTokensAbove = (block: ToolResultBlock, count: CountMessage, limit: number) =>
  contentText(block.content).length > 256 * (limit + 1) || resultTokens(block, count) > limit;

/** Offloads one result block: its artifact (content byte-exact) and the block that names it. */
export function offloadResultBlock(
  block: ToolResultBlock,
  seq: number,
  toolName: string | undefined,
  count: CountMessage,
  /** The block's tokens when the caller knows them (a stored message that holds only this block). */
  knownTokens?: number,
): { block: ToolResultBlock; artifact: ArtifactOutput } {
  const content = artifactContent(block.content);
  const id = contentId('art', seq, block.toolUseId, content);
  const tokens = knownTokens ?? resultTokens(block, count);
  const reference = offloadReference({ id, toolName: toolName ?? 'tool', content: block.content, tokens, isError: block.isError });
  return {
    block: { ...block, content: reference },
    artifact: { id, seq, toolUseId: block.toolUseId, ...(toolName !== undefined ? { toolName } : {}), content, tokens },
  };
}

/**
 * Offloads the results of one message that `select` picks. The message is replaced only when
 * it gets smaller (Guarantee 5); undefined when nothing changed.
 */
export function offloadMessage(
  m: SessionMessage,
  select: (block: ToolResultBlock) => boolean,
  names: ReadonlyMap<string, string>,
  count: CountMessage,
): { message: SessionMessage; artifacts: ArtifactOutput[] } | undefined {
  if (m.message.role === 'system') return undefined;
  const artifacts: ArtifactOutput[] = [];
  const blocks: Block[] = m.message.blocks.map((b) => {
    if (b.type !== 'tool_result' || isReference(b.content) || !select(b)) return b;
    // A message that is only this result (Anthropic's user tool_result, OpenAI's `tool` message) was counted at
    // ingest: its stored count is the block's (no second count of a text that may be 30 MB).
    const known = (m.message.role === 'user' || m.message.role === 'tool') && m.message.blocks.length === 1 ? m.tokens : undefined;
    const out = offloadResultBlock(b, m.seq, names.get(b.toolUseId), count, known);
    artifacts.push(out.artifact);
    return out.block;
  });
  if (artifacts.length === 0) return undefined;
  const message: CanonicalMessage = { ...m.message, blocks };
  const tokens = count(message);
  if (tokens >= m.tokens) return undefined;
  return { message: { seq: m.seq, message, tokens }, artifacts };
}

export interface OffloadParams {
  /** Results above this many tokens are offloaded. */
  minTokens: number;
  /**
   * Guarantee 3's first give-way step: results in protected messages are offloaded too (a
   * reference counts as kept). Results of exempt tools never are.
   */
  includeProtected?: boolean;
}

export interface OffloadResult {
  messages: SessionMessage[];
  /** Seqs whose results were offloaded, with the artifact ids each one now names. */
  offloaded: Array<{ seq: number; artifactIds: string[] }>;
  artifacts: ArtifactOutput[];
  tokensBefore: number;
  tokensAfter: number;
}

/** tool_use id → tool name, over the messages. */
export function toolNamesOf(messages: readonly SessionMessage[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const m of messages) for (const b of m.message.blocks) if (b.type === 'tool_use') names.set(b.id, b.name);
  return names;
}

/**
 * Offloads every tool result above `minTokens` outside protection (Guarantee 3: protected
 * messages and exempt tools are left alone unless `includeProtected`; exempt tools always).
 * Pure and deterministic: artifact ids are content hashes (Guarantee 8).
 */
export function offloadToolResults(
  messages: SessionMessage[],
  protection: Protection,
  params: OffloadParams,
  count: CountMessage,
  names: ReadonlyMap<string, string> = toolNamesOf(messages),
): OffloadResult {
  const offloaded: OffloadResult['offloaded'] = [];
  const artifacts: ArtifactOutput[] = [];
  const out = messages.map((m) => {
    if (m.message.role === 'system') return m;
    if (protection.whole.has(m.seq) && !params.includeProtected) return m;
    const r = offloadMessage(m, (b) => !protection.exemptToolUseIds.has(b.toolUseId) && resultTokensAbove(b, count, params.minTokens), names, count);
    if (!r) return m;
    offloaded.push({ seq: m.seq, artifactIds: r.artifacts.map((a) => a.id) });
    artifacts.push(...r.artifacts);
    return r.message;
  });
  const sum = (xs: SessionMessage[]) => xs.reduce((n, m) => n + m.tokens, 0);
  return { messages: out, offloaded, artifacts, tokensBefore: sum(messages), tokensAfter: sum(out) };
}

/** The prefix treatments of an offload: `offloaded`, with the message's context form. */
export function offloadTreatments(result: OffloadResult): Record<number, Treatment> {
  const bySeq = new Map(result.messages.map((m) => [m.seq, m]));
  const out: Record<number, Treatment> = {};
  for (const o of result.offloaded) {
    const m = bySeq.get(o.seq);
    if (m) out[o.seq] = { kind: 'offloaded', artifactIds: o.artifactIds, message: m.message, tokens: m.tokens };
  }
  return out;
}

/** The artifact ids a set of treatments refers to. */
export function referencedArtifactIds(treatments: Record<number, Treatment>): Set<string> {
  const ids = new Set<string>();
  for (const t of Object.values(treatments)) if (t.kind === 'offloaded') for (const id of t.artifactIds) ids.add(id);
  return ids;
}

export interface OffloadIngestParams {
  /** A result above this many tokens is offloaded when it arrives. */
  offloadAboveTokens: number;
  protection: Pick<ProtectionPolicy, 'exemptToolNames'>;
}

/**
 * Ingest step (`balanced`, SPEC.md "Policies"): a result above `offloadAboveTokens` is
 * offloaded as soon as it is appended, whatever its age. Pinned messages and exempt tools are
 * left alone (Guarantee 3); the full result stays in the history and as the artifact.
 */
export const offloadLargeResult: IngestStep<OffloadIngestParams> = (message, params, count, names) => {
  if (message.message.pinned || message.message.role === 'system') return undefined;
  const exempt = new Set(params.protection.exemptToolNames);
  const r = offloadMessage(
    message,
    (b) => !exempt.has(names.get(b.toolUseId) ?? '') && resultTokensAbove(b, count, params.offloadAboveTokens),
    names,
    count,
  );
  return r ? { message: r.message, artifacts: r.artifacts, stage: 'offloaded' } : undefined;
};
