import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { Block, CanonicalMessage, TextBlock, ToolResultBlock } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { parseOpenAIMessages } from '../messages/openai';
import { makeProviderValid, providerValidityProblems } from '../messages/provider-valid';
import {
  artifactContent,
  OFFLOAD_MARKER,
  offloadDigest,
  offloadLargeResult,
  offloadResultBlock,
  offloadToolResults,
  offloadTreatments,
  READ_ARTIFACT_TOOL,
  READ_ARTIFACT_TOOL_OPENAI,
  readArtifactSlice,
  toolNamesOf,
} from './offload';
import { ProtectionPolicy, protectionOf } from './protection';
import { CountMessage, SessionMessage } from './types';
import { contentId } from './version';

/** A cheap deterministic counter (4 characters a token): the stage only compares counts. */
const count: CountMessage = (m) => 3 + Math.ceil(countableParts(m).texts.reduce((n, t) => n + t.length, 0) / 4);
const session = (messages: CanonicalMessage[], from = 1): SessionMessage[] => messages.map((message, i) => ({ seq: from + i, message, tokens: count(message) }));
const text = (t: string): TextBlock => ({ type: 'text', text: t });
const listing = (label: string, lines: number) =>
  Array.from({ length: lines }, (_, i) => (i === 7 ? `Traceback: ValueError in src/${label}/core.py:${i}` : `${label} line ${i}: value=${i * 7} see lib/${label}/mod_${i % 3}.ts`)).join('\n');
const result = (id: string, content: ToolResultBlock['content'], isError = false): ToolResultBlock => ({ type: 'tool_result', toolUseId: id, content, isError });
const policy = (over: Partial<ProtectionPolicy> = {}): ProtectionPolicy => ({ latestMessages: 0, latestUserTexts: 0, allUserTexts: false, exemptToolNames: [], ...over });

describe('offload stage (seed 003 offload; SPEC.md "Artifact")', () => {
  it('seed 003: replaces a result by a reference naming GET /v1/artifacts/<id> and compactor_read_artifact, with an id that is the content hash', () => {
    const content = listing('api', 200);
    const block = { ...result('call_1', content), extras: { cache_control: { type: 'ephemeral' } }, origin: 'anthropic' as const };
    const out = offloadResultBlock(block, 12, 'read_file', count);
    const id = contentId('art', 12, 'call_1', content);
    expect(id).toMatch(/^art_[0-9a-f]{20}$/);
    expect(out.artifact).toEqual({ id, seq: 12, toolUseId: 'call_1', toolName: 'read_file', content, tokens: count({ role: 'user', blocks: [block] }) });
    expect(out.block).toMatchObject({ type: 'tool_result', toolUseId: 'call_1', isError: false, extras: { cache_control: { type: 'ephemeral' } }, origin: 'anthropic' });
    const ref = out.block.content as string;
    expect(ref.startsWith(`${OFFLOAD_MARKER}: read_file, 200 lines, ${content.length.toLocaleString('en-US')} chars,`)).toBe(true);
    expect(ref).toContain(`GET /v1/artifacts/${id}`);
    expect(ref).toContain(`compactor_read_artifact {"artifactId":"${id}"}`);
    expect(ref.length).toBeLessThan(1_500);
  });

  it('stores array content as the JSON of its parts, byte-exact, and says how many images it held', () => {
    const parts: ToolResultBlock['content'] = [text(listing('img', 40)), { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' } }];
    const out = offloadResultBlock(result('c', parts), 3, undefined, count);
    expect(out.artifact.content).toBe(JSON.stringify(parts));
    expect(artifactContent(parts)).toBe(JSON.stringify(parts));
    expect(out.artifact.toolName).toBeUndefined();
    expect(out.block.content as string).toMatch(/^\[offloaded tool output: tool, 40 lines/);
    expect(out.block.content as string).toContain('parts: 2 part(s), 1 image(s)');
  });

  it('digest: size, first and last lines, error lines with their line numbers, paths; short whatever the size; deterministic', () => {
    const content = listing('core', 5_000);
    const digest = offloadDigest(content);
    expect(digest).toContain('first lines: core line 0: value=0 see lib/core/mod_0.ts ⏎ core line 1');
    expect(digest).toContain('last lines: core line 4997');
    expect(digest).toContain('error lines (1): 8: Traceback: ValueError in src/core/core.py:7');
    expect(digest).toMatch(/paths: lib\/core\/mod_0\.ts, lib\/core\/mod_1\.ts, lib\/core\/mod_2\.ts, src\/core\/core\.py/);
    expect(digest.length).toBeLessThan(1_200);
    expect(offloadDigest(content)).toBe(digest);
    expect(offloadDigest('')).toBe('');
    // URLs are not paths.
    expect(offloadDigest('see https://example.com/a/b and ./src/x.ts')).toContain('paths: ./src/x.ts');
  });

  it('publishes compactor_read_artifact as a valid tool definition in both provider shapes', () => {
    expect(READ_ARTIFACT_TOOL.name).toBe('compactor_read_artifact');
    expect(READ_ARTIFACT_TOOL.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(READ_ARTIFACT_TOOL.description.length).toBeGreaterThan(40);
    expect(READ_ARTIFACT_TOOL.input_schema).toMatchObject({
      type: 'object',
      properties: { artifactId: { type: 'string' }, offset: { type: 'integer' }, limit: { type: 'integer' } },
      required: ['artifactId'],
    });
    expect(READ_ARTIFACT_TOOL_OPENAI).toEqual({
      type: 'function',
      function: { name: 'compactor_read_artifact', description: READ_ARTIFACT_TOOL.description, parameters: READ_ARTIFACT_TOOL.input_schema },
    });
    // The id a reference names matches the schema's pattern.
    const id = offloadResultBlock(result('c', listing('x', 100)), 1, 'bash', count).artifact.id;
    expect(new RegExp(READ_ARTIFACT_TOOL.input_schema.properties.artifactId.pattern).test(id)).toBe(true);
  });

  it('reads an artifact back in slices that join to the exact content, never splitting a surrogate pair', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), fc.integer({ min: 1, max: 50 }), (content, limit) => {
        let offset: number | null = 0;
        let joined = '';
        while (offset !== null) {
          const s = readArtifactSlice(content, offset, limit);
          expect(s.totalChars).toBe(content.length);
          joined += s.content;
          offset = s.nextOffset;
        }
        expect(joined).toBe(content);
      }),
      { numRuns: 200, seed: 7 },
    );
    expect(readArtifactSlice('a😀b', 0, 2)).toEqual({ content: 'a😀', offset: 0, totalChars: 4, nextOffset: 3 });
    expect(readArtifactSlice('abc', 10)).toEqual({ content: '', offset: 3, totalChars: 3, nextOffset: null });
  });

  it('offloads results above the threshold, leaves small ones, protected messages and exempt tools alone; includeProtected is the give-way step', () => {
    const s = session([
      { role: 'user', blocks: [text('go')] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'a', name: 'read_file', input: {} }, { type: 'tool_use', id: 'm', name: 'memory', input: {} }] },
      { role: 'user', blocks: [result('a', listing('a', 200)), result('m', listing('m', 200))] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 's', name: 'bash', input: {} }] },
      { role: 'user', blocks: [result('s', 'ok')] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'p', name: 'bash', input: {} }] },
      { role: 'user', blocks: [result('p', listing('p', 200))], pinned: true },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'l', name: 'bash', input: {} }] },
      { role: 'user', blocks: [result('l', listing('l', 200))] },
    ]);
    const protection = protectionOf(s, policy({ latestMessages: 2, exemptToolNames: ['memory'] }));
    const out = offloadToolResults(s, protection, { minTokens: 100 }, count);
    expect(out.offloaded).toEqual([{ seq: 3, artifactIds: [contentId('art', 3, 'a', listing('a', 200))] }]);
    expect((out.messages[2].message.blocks[1] as ToolResultBlock).content).toBe(listing('m', 200));
    expect(out.messages[4]).toBe(s[4]);
    expect(out.messages[6]).toBe(s[6]);
    expect(out.messages[8]).toBe(s[8]);
    expect(out.tokensAfter).toBeLessThan(out.tokensBefore);
    const treatments = offloadTreatments(out);
    expect(treatments[3]).toMatchObject({ kind: 'offloaded', artifactIds: out.offloaded[0].artifactIds, tokens: out.messages[2].tokens });

    const giveWay = offloadToolResults(s, protection, { minTokens: 100, includeProtected: true }, count);
    expect(giveWay.offloaded.map((o) => o.seq)).toEqual([3, 7, 9]);
    expect(giveWay.artifacts.map((a) => a.toolName)).toEqual(['read_file', 'bash', 'bash']);
    // Idempotent: a reference is never offloaded again.
    expect(offloadToolResults(giveWay.messages, protection, { minTokens: 0, includeProtected: true }, count).offloaded).toEqual([]);
  });

  it('ingest step offloadLargeResult: offloads a result above offloadAboveTokens when it arrives; not pinned messages, exempt tools or small results', () => {
    const params = { offloadAboveTokens: 500, protection: { exemptToolNames: ['memory'] } };
    const names = new Map([
      ['a', 'read_file'],
      ['m', 'memory'],
    ]);
    const [big] = session([{ role: 'tool', blocks: [result('a', listing('a', 300))] }], 5);
    const r = offloadLargeResult(big, params, count, names);
    expect(r?.stage).toBe('offloaded');
    expect(r?.artifacts).toHaveLength(1);
    expect(r?.artifacts[0]).toMatchObject({ seq: 5, toolUseId: 'a', toolName: 'read_file', content: listing('a', 300) });
    expect(r?.message.seq).toBe(5);
    expect(r?.message.tokens).toBe(count(r!.message.message));
    expect(r!.message.tokens).toBeLessThan(big.tokens);
    const [pinned] = session([{ role: 'tool', blocks: [result('a', listing('a', 300))], pinned: true }]);
    expect(offloadLargeResult(pinned, params, count, names)).toBeUndefined();
    const [exempt] = session([{ role: 'tool', blocks: [result('m', listing('m', 300))] }]);
    expect(offloadLargeResult(exempt, params, count, names)).toBeUndefined();
    const [small] = session([{ role: 'tool', blocks: [result('a', listing('a', 10))] }]);
    expect(offloadLargeResult(small, params, count, names)).toBeUndefined();
  });

  it('on a real SWE-agent session: valid context, artifacts hold the original outputs byte-exact', () => {
    const raw = (JSON.parse(readFileSync(join(__dirname, '../../../../testdata/swe-agent-trajectories/marshmallow-1867__function_calling.traj'), 'utf8')) as { history: unknown[] }).history;
    const parsed = parseOpenAIMessages(raw, 'history');
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const s = session(parsed.value);
    const out = offloadToolResults(s, protectionOf(s, policy({ latestMessages: 5 })), { minTokens: 500 }, count);
    expect(out.artifacts.length).toBeGreaterThanOrEqual(2);
    const bySeq = new Map(s.map((m) => [m.seq, m]));
    for (const a of out.artifacts) {
      const original = bySeq.get(a.seq)!.message.blocks.find((b): b is ToolResultBlock => b.type === 'tool_result' && b.toolUseId === a.toolUseId)!;
      expect(a.content).toBe(original.content);
    }
    expect(providerValidityProblems(makeProviderValid(out.messages.map((m) => m.message)).messages)).toEqual([]);
  });

  it('properties: valid stays valid (G2), never more tokens (G5), protected untouched (G3), deterministic (G8), artifacts byte-exact', () => {
    const arb = fc
      .record({
        openaiShape: fc.boolean(),
        steps: fc.array(
          fc.record({ calls: fc.integer({ min: 0, max: 3 }), lines: fc.integer({ min: 0, max: 400 }), parts: fc.boolean(), pinned: fc.boolean(), tool: fc.constantFrom('bash', 'read_file', 'memory'), pad: fc.constantFrom('', '\n', '  \t', '\r\n', ' é😀 ') }),
          { maxLength: 12 },
        ),
        latest: fc.integer({ min: 0, max: 6 }),
        minTokens: fc.integer({ min: 0, max: 800 }),
        includeProtected: fc.boolean(),
      })
      .map(({ openaiShape, steps, latest, minTokens, includeProtected }) => {
        const out: CanonicalMessage[] = [{ role: 'system', blocks: [text('You are an agent.')] }, { role: 'user', blocks: [text('Fix it.')] }];
        let id = 0;
        steps.forEach((st, k) => {
          const ids = Array.from({ length: st.calls }, () => `call_${(id += 1)}`);
          out.push({ role: 'assistant', blocks: [text(`Step ${k}`), ...ids.map((c): Block => ({ type: 'tool_use', id: c, name: st.tool, input: { k } }))], ...(st.pinned ? { pinned: true } : {}) });
          const body = (c: string) => `${st.pad}${listing(c, st.lines)}${st.pad}`;
          const results = ids.map((c) => result(c, st.parts ? [text(body(c))] : body(c), k % 3 === 0));
          if (openaiShape) for (const r of results) out.push({ role: 'tool', blocks: [r] });
          else if (results.length) out.push({ role: 'user', blocks: results });
        });
        return { s: session(out), latest, minTokens, includeProtected };
      });
    fc.assert(
      fc.property(arb, ({ s, latest, minTokens, includeProtected }) => {
        const protection = protectionOf(s, policy({ latestMessages: latest, exemptToolNames: ['memory'] }));
        const out = offloadToolResults(s, protection, { minTokens, includeProtected }, count);
        const after = out.messages.map((m) => m.message);
        expect(providerValidityProblems(after)).toEqual(providerValidityProblems(s.map((m) => m.message)));
        expect(providerValidityProblems(after)).toEqual([]);
        expect(out.tokensAfter).toBeLessThanOrEqual(out.tokensBefore);
        out.messages.forEach((m, i) => {
          expect(m.tokens).toBeLessThanOrEqual(s[i].tokens);
          if (protection.whole.has(m.seq) && !includeProtected) expect(m).toBe(s[i]);
          if (m.message.role === 'system') expect(m).toBe(s[i]);
          m.message.blocks.forEach((b, k) => {
            if (b.type === 'tool_result' && protection.exemptToolUseIds.has(b.toolUseId)) expect(b).toBe(s[i].message.blocks[k]);
          });
        });
        expect(offloadToolResults(s, protection, { minTokens, includeProtected }, count)).toEqual(out);
        const names = toolNamesOf(s);
        for (const a of out.artifacts) {
          const original = s.find((m) => m.seq === a.seq)!.message.blocks.find((b): b is ToolResultBlock => b.type === 'tool_result' && b.toolUseId === a.toolUseId)!;
          expect(a.content).toBe(artifactContent(original.content));
          expect(a.id).toBe(contentId('art', a.seq, original.toolUseId, a.content));
          expect(a.toolName).toBe(names.get(original.toolUseId));
        }
        // Every offloaded message names exactly its artifacts.
        for (const o of out.offloaded) {
          const m = out.messages.find((x) => x.seq === o.seq)!;
          for (const artifactId of o.artifactIds) expect(JSON.stringify(m.message)).toContain(`GET /v1/artifacts/${artifactId}`);
        }
      }),
      { numRuns: 150, seed: 3003 },
    );
  });
});
