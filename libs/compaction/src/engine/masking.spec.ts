import fc from 'fast-check';
import { countTextSync } from '@compactor/tokens';
import { Block, CanonicalMessage } from '../messages/canonical';
import { countableParts } from '../messages/countable';
import { makeProviderValid, providerValidityProblems } from '../messages/provider-valid';
import { maskObservations } from './masking';
import { errorLines } from '../ledger/errors';
import { ProtectionPolicy, protectionOf } from './protection';
import { CountMessage, SessionMessage } from './types';

const count: CountMessage = (m) => 3 + countableParts(m).texts.reduce((n, t) => n + countTextSync(t, 'o200k_base'), 0);
const session = (messages: CanonicalMessage[]): SessionMessage[] => messages.map((message, i) => ({ seq: i + 1, message, tokens: count(message) }));
const text = (t: string): Block => ({ type: 'text', text: t });
const big = (label: string) => `${label}\n` + Array.from({ length: 60 }, (_, i) => `line ${i} of ${label}: value=${i * 7}`).join('\n');

const policy = (over: Partial<ProtectionPolicy> = {}): ProtectionPolicy => ({ latestMessages: 2, latestUserTexts: 3, allUserTexts: false, exemptToolNames: [], ...over });
const params = { keepLatestTurns: 1, minTokens: 20 };

/** An agent session: tool calls (sometimes parallel), results (sometimes errors), in both provider shapes. */
const sessionArb = fc
  .record({
    openaiShape: fc.boolean(),
    system: fc.boolean(),
    steps: fc.array(
      fc.record({
        calls: fc.integer({ min: 0, max: 3 }),
        error: fc.boolean(),
        size: fc.integer({ min: 1, max: 80 }),
        user: fc.boolean(),
        thinking: fc.boolean(),
        pinned: fc.boolean(),
        tool: fc.constantFrom('read_file', 'bash', 'grep', 'memory'),
      }),
      { maxLength: 16 },
    ),
  })
  .map(({ openaiShape, system, steps }) => {
    const out: CanonicalMessage[] = [];
    if (system) out.push({ role: 'system', blocks: [text('You are a coding agent.')] });
    out.push({ role: 'user', blocks: [text('Fix the bug. Never touch the migrations.')] });
    let id = 0;
    steps.forEach((s, k) => {
      const ids = Array.from({ length: s.calls }, () => `call_${(id += 1)}`);
      const blocks: Block[] = [];
      if (s.thinking) blocks.push({ type: 'thinking', thinking: `step ${k}`, signature: 'sig' });
      blocks.push(text(`Step ${k}.`));
      for (const c of ids) blocks.push({ type: 'tool_use', id: c, name: s.tool, input: { step: k } });
      out.push({ role: 'assistant', blocks, ...(s.pinned ? { pinned: true } : {}) });
      const results = ids.map((c): Block => ({ type: 'tool_result', toolUseId: c, content: 'x '.repeat(s.size * 10) + big(c), isError: s.error }));
      if (results.length) {
        if (openaiShape) for (const r of results) out.push({ role: 'tool', blocks: [r] });
        else out.push({ role: 'user', blocks: results });
      }
      if (s.user) out.push({ role: 'user', blocks: [text(`note ${k}`)] });
    });
    return session(out);
  });

describe('observation masking (balanced; SPEC.md Policies)', () => {
  it('keeps the failure lines of a masked output (up to three), so the agent still knows what went wrong', () => {
    const log = [...Array.from({ length: 80 }, (_, i) => `collected test_${i} PASSED`), 'E   psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint "orders_pkey"', 'FAILED tests/test_orders.py::test_create - UniqueViolation', '1 failed, 80 passed in 2.31s'].join('\n');
    const s = session([
      { role: 'user', blocks: [text('go')] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'a', name: 'bash', input: {} }] },
      { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'a', content: log, isError: false }] },
      { role: 'assistant', blocks: [text('fixing it')] },
    ]);
    const out = maskObservations(s, protectionOf(s, policy({ latestMessages: 0 })), { ...params, keepLatestTurns: 0 }, count);
    const content = (out.messages[2].message.blocks[0] as { content: string }).content;
    expect(content).toContain('[masked tool output: bash');
    expect(content).toContain('psycopg2.errors.UniqueViolation');
    expect(content).toContain('FAILED tests/test_orders.py::test_create');
    expect(content).not.toContain('test_5 PASSED');
    expect(out.messages[2].tokens).toBeLessThan(s[2].tokens);
  });

  it('failure lines: the named failure and where it happened come before run summaries', () => {
    const goPanic = ['=== RUN   TestLedger', 'panic: assignment to entry in nil map', '', 'goroutine 7 [running]:', 'example.com/shop/cart.(*Basket).Add(0xc0000a2000, {0x5, 0x1})', '\t/src/cart/basket.go:41 +0x64', 'FAIL\texample.com/shop/cart\t0.012s'].join('\n');
    expect(errorLines(goPanic)).toEqual(['panic: assignment to entry in nil map', 'example.com/shop/cart.(*Basket).Add(0xc0000a2000, {0x5, 0x1})']);
    const pyTrace = ['Traceback (most recent call last):', '  File "/app/main.py", line 3, in <module>', '    run()', '  File "/app/jobs.py", line 88, in run', '    rows[key]', "KeyError: 'tenant_slug'"].join('\n');
    expect(errorLines(pyTrace)).toEqual(['Traceback (most recent call last):', 'File "/app/jobs.py", line 88, in run', "KeyError: 'tenant_slug'"]);
    const jest = ['Test Suites: 1 failed, 12 passed, 13 total', 'Tests:       1 failed, 80 passed', 'Error: connect ECONNREFUSED 127.0.0.1:6380'].join('\n');
    expect(errorLines(jest)[0]).toBe('Test Suites: 1 failed, 12 passed, 13 total');
    expect(errorLines(jest)).toContain('Error: connect ECONNREFUSED 127.0.0.1:6380');
    const http = ['HTTP/1.1 503 Service Unavailable', 'server: billing.internal', '', 'upstream overloaded'].join('\n');
    expect(errorLines(http)).toEqual(['HTTP/1.1 503 Service Unavailable']);
    expect(errorLines('all 40 tests passed\nok')).toEqual([]);
  });

  it('failure lines: source code that names an error type is not a failure; a diagnostic keeps its indented detail line', () => {
    // A file read: the listing raises errors, nothing failed.
    const listing = ['[File: src/app/jobs.py (120 lines total)]', '41:    if not handler:', '42:        raise ValueError(f"invalid handler: {handler!r}")', '43:    return handler'].join('\n');
    expect(errorLines(listing)).toEqual([]);
    // A diff's import names an exception class; the Prisma failure after it is what went wrong.
    const prisma = [
      "+import { Injectable, NotFoundException } from '@nestjs/common';",
      'PrismaClientKnownRequestError:',
      'Invalid `prisma.coupon.create()` invocation:',
      'Unique constraint failed on the fields: (`couponCode`)',
      "  code: 'P2002'",
    ].join('\n');
    expect(errorLines(prisma)).toEqual(['PrismaClientKnownRequestError:', 'Unique constraint failed on the fields: (`couponCode`)', "code: 'P2002'"]);
    const tsc = ['added 3 packages in 2s', "src/orders/order.service.ts(143,31): error TS2554: Expected 2 arguments, but got 4.", "  In the call to 'verifyOrder'."].join('\n');
    expect(errorLines(tsc)).toEqual(["src/orders/order.service.ts(143,31): error TS2554: Expected 2 arguments, but got 4. In the call to 'verifyOrder'."]);
  });

  it('replaces old tool outputs by a placeholder naming the tool and where the output is, and keeps the latest turns', () => {
    const s = session([
      { role: 'user', blocks: [text('go')] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'a', name: 'read_file', input: {} }] },
      { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'a', content: big('a'), isError: false }] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'b', name: 'bash', input: {} }] },
      { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'b', content: big('b'), isError: true }] },
    ]);
    const out = maskObservations(s, protectionOf(s, policy({ latestMessages: 0 })), params, count);
    expect(out.masked).toEqual([3]);
    const masked = out.messages[2].message.blocks[0];
    expect(masked).toMatchObject({ type: 'tool_result', toolUseId: 'a', isError: false });
    expect((masked as { content: string }).content).toMatch(/^\[masked tool output: read_file, 61 lines, ~\d+ tokens; the full output is in the session history at seq 3\]$/);
    expect(out.messages[4]).toBe(s[4]);
    expect(out.tokensAfter).toBeLessThan(out.tokensBefore);
  });

  it('leaves exempt tools, pinned messages and the latest N messages alone', () => {
    const s = session([
      { role: 'user', blocks: [text('go')] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'm', name: 'memory', input: {} }] },
      { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'm', content: big('m'), isError: false }] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'p', name: 'bash', input: {} }] },
      { role: 'user', blocks: [{ type: 'tool_result', toolUseId: 'p', content: big('p'), isError: false }], pinned: true },
      { role: 'assistant', blocks: [text('done')] },
    ]);
    const out = maskObservations(s, protectionOf(s, policy({ exemptToolNames: ['memory'], latestMessages: 1 })), { keepLatestTurns: 0, minTokens: 0 }, count);
    expect(out.masked).toEqual([]);
    out.messages.forEach((m, i) => expect(m).toBe(s[i]));
  });

  it('widens "the latest N messages" to the whole tool exchange they start in', () => {
    const s = session([
      { role: 'user', blocks: [text('go')] },
      { role: 'assistant', blocks: [{ type: 'tool_use', id: 'a', name: 'bash', input: {} }, { type: 'tool_use', id: 'b', name: 'bash', input: {} }] },
      { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'a', content: big('a'), isError: false }] },
      { role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'b', content: big('b'), isError: false }] },
    ]);
    expect([...protectionOf(s, policy({ latestMessages: 1 })).whole].sort()).toEqual([2, 3, 4]);
  });

  it('properties: valid stays valid (G2), never more tokens (G5), protected untouched (G3), deterministic and idempotent (G8)', () => {
    fc.assert(
      fc.property(sessionArb, fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 4 }), (s, latest, keep) => {
        const p = policy({ latestMessages: latest, exemptToolNames: ['memory'] });
        const protection = protectionOf(s, p);
        const out = maskObservations(s, protection, { keepLatestTurns: keep, minTokens: 20 }, count);
        const before = s.map((m) => m.message);
        const after = out.messages.map((m) => m.message);
        // G2: same messages, roles, block types and tool ids; a valid input gives a valid output.
        expect(after.map((m) => [m.role, m.blocks.map((b) => (b.type === 'tool_result' ? b.toolUseId : b.type === 'tool_use' ? b.id : b.type))])).toEqual(
          before.map((m) => [m.role, m.blocks.map((b) => (b.type === 'tool_result' ? b.toolUseId : b.type === 'tool_use' ? b.id : b.type))]),
        );
        expect(providerValidityProblems(makeProviderValid(after).messages)).toEqual([]);
        expect(providerValidityProblems(after)).toEqual(providerValidityProblems(before));
        // G5
        expect(out.tokensAfter).toBeLessThanOrEqual(out.tokensBefore);
        out.messages.forEach((m, i) => expect(m.tokens).toBeLessThanOrEqual(s[i].tokens));
        // G3: protected messages and exempt tools are the same objects / unchanged; thinking turns byte-exact.
        out.messages.forEach((m, i) => {
          if (protection.whole.has(m.seq)) expect(m).toBe(s[i]);
          m.message.blocks.forEach((b, k) => {
            if (b.type === 'tool_result' && protection.exemptToolUseIds.has(b.toolUseId)) expect(b).toBe(s[i].message.blocks[k]);
            if (b.type === 'thinking') expect(b).toBe(s[i].message.blocks[k]);
          });
        });
        // G8 and idempotence
        expect(maskObservations(s, protection, { keepLatestTurns: keep, minTokens: 20 }, count)).toEqual(out);
        expect(maskObservations(out.messages, protection, { keepLatestTurns: keep, minTokens: 20 }, count).masked).toEqual([]);
      }),
      { numRuns: 150, seed: 20261123 },
    );
  });
  it('gives the same result on every call, memoized or not: a repeated call, another tool name, an exempt tool, another counter', () => {
    fc.assert(
      fc.property(sessionArb, (messages) => {
        const protection = protectionOf(messages, policy());
        const fresh = () => session(messages.map((m) => structuredClone(m.message)));
        const first = maskObservations(messages, protection, params, count);
        const again = maskObservations(messages, protection, params, count);
        expect(again).toEqual(first);
        expect(again).toEqual(maskObservations(fresh(), protectionOf(fresh(), policy()), params, count));
        // What decides a message's mask changes: the memo must not answer with the old form.
        const exempt = protectionOf(messages, policy({ exemptToolNames: ['bash'] }));
        expect(maskObservations(messages, exempt, params, count)).toEqual(maskObservations(fresh(), protectionOf(fresh(), policy({ exemptToolNames: ['bash'] })), params, count));
        const other: CountMessage = (m) => 2 * count(m);
        expect(maskObservations(messages, protection, params, other)).toEqual(maskObservations(fresh(), protectionOf(fresh(), policy()), params, other));
      }),
      { numRuns: 40 },
    );
  });
});
