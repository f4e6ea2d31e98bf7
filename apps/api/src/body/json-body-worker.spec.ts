import express from 'express';
import fc from 'fast-check';
import { Readable } from 'node:stream';
import { MAX_JSON_DEPTH, mayHoldUnstorableText, nestsDeeperThan, unstorableText } from './json-body-limits';
import { parseJsonBody } from './json-body-worker';
import { LargeJsonParser, replyOutcome } from './large-json-body';

type Outcome = { value: unknown } | { error: string };

/** What request-body.ts's express.json path makes of `bytes`: the value, or the class of its error. */
function viaExpressJson(bytes: Buffer): Promise<Outcome> {
  const json = express.json({
    limit: '32mb',
    verify: (req, _res, buf) => {
      if (nestsDeeperThan(buf, MAX_JSON_DEPTH)) throw Object.assign(new Error('too deep'), { type: 'too-deep' });
      (req as unknown as { suspect: boolean }).suspect = mayHoldUnstorableText(buf);
    },
  });
  const req = Object.assign(Readable.from([bytes]), { headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) } }) as unknown as express.Request;
  return new Promise((resolve) => {
    json(req, {} as express.Response, (error?: unknown) => {
      if (error) return resolve({ error: (error as { type: string }).type === 'too-deep' ? 'too-deep' : (error as { type: string }).type === 'entity.parse.failed' ? 'invalid-json' : `other: ${String(error)}` });
      const problem = (req as unknown as { suspect: boolean }).suspect ? unstorableText(req.body) : undefined;
      resolve(problem ? { error: `text ${problem.field}: ${problem.message}` } : { value: req.body });
    });
  });
}

function viaWorkerParse(bytes: Buffer): Outcome {
  const reply = parseJsonBody(1, new Uint8Array(bytes));
  if (reply.ok) return { value: reply.value };
  if (reply.kind === 'text') return { error: `text ${reply.problem.field}: ${reply.problem.message}` };
  return { error: reply.kind };
}

/** JSON-ish texts: valid JSON, with escapes that matter (NUL, surrogates), deep nesting, whitespace, a BOM, and random damage. */
const jsonish = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
  fc.array(fc.constantFrom('{', '}', '[', ']', '"a"', ':', ',', '1', '"\\u0000"', '"\\ud800"', '"\\udc00x"', '"\\ud83d\\ude00"', '"\\\\u0000"', ' ', '\n', 'null', '\ufeff'), { maxLength: 40 }).map((parts) => parts.join('')),
  fc.tuple(fc.integer({ min: MAX_JSON_DEPTH - 2, max: MAX_JSON_DEPTH + 2 }), fc.constantFrom('[', '{"k":')).map(([n, open]) => `${open.repeat(n)}1${(open === '[' ? ']' : '}').repeat(n)}`),
  fc.tuple(fc.jsonValue({ maxDepth: 3 }), fc.string({ unit: fc.constantFrom('\\u0000', '\\uD800', '\\uDFFF', 'a', '\\\\', '"', '\\n'), maxLength: 6 })).map(([v, s]) => `{"x":${JSON.stringify(v)},"s":"${s}"}`),
  fc.tuple(fc.constantFrom('', ' ', '\ufeff', '\t\r\n'), fc.jsonValue({ maxDepth: 2 }), fc.nat(20)).map(([lead, v, cut]) => (lead + JSON.stringify(v)).slice(0, Math.max(0, JSON.stringify(v).length + lead.length - (cut % 3)))),
);

describe('the worker thread\'s JSON body parse', () => {
  it('gives the same value or error class as express.json on random bodies', async () => {
    await fc.assert(
      fc.asyncProperty(jsonish, async (text) => {
        const bytes = Buffer.from(text, 'utf8');
        expect(viaWorkerParse(bytes)).toEqual(await viaExpressJson(bytes));
      }),
      { numRuns: 2000 },
    );
  });

  it('parses on a real worker thread, and maps its refusals to the API\'s errors', async () => {
    const parser = new LargeJsonParser();
    try {
      const ok = replyOutcome(await parser.parse(Buffer.from('{"a":[1,"\\ud83d\\ude00"]}')));
      expect(ok).toEqual({ value: { a: [1, '\ud83d\ude00'] } });
      const bad = replyOutcome(await parser.parse(Buffer.from('{"a":')));
      expect('error' in bad && (bad.error as Error & { type: string }).type).toBe('entity.parse.failed');
      const nul = replyOutcome(await parser.parse(Buffer.from('{"a":["\\u0000"]}')));
      expect('error' in nul && nul.error.message).toBe('a[0]: contains U+0000 (NUL), which PostgreSQL cannot store in text');
    } finally {
      await parser.close();
    }
  });
});
