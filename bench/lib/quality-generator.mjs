// Generated coding-agent sessions with planted facts, for the quality benchmark. Each session
// is a long agent run (about 55k–150k tokens) in one of three project flavours, in Anthropic or
// OpenAI shape, where tool output is most of the tokens. Facts are planted mostly in the first
// two thirds (so they must survive compaction), in varied wording, with names drawn from a
// seeded RNG out of a vocabulary that the filler never uses. Each fact carries its retention
// check (quality-facts.mjs). Nothing here is shared with, or tuned to, any summarizer.
// The sentences that say the facts come from a wording table (quality-wording.mjs): `original`
// (the default, `gen-…` sessions) or `paraphrase` (the same facts in independent wording,
// `para-…` sessions), chosen with `{ wording }`.
import { rng } from './random.mjs';
import { cap, fileListing, grepOutput, projectNames, reasoning, sentence, shellOutput, sourceLines, statusUpdate, testRun, userFollowup } from './quality-noise.mjs';
import { WORDINGS } from './quality-wording.mjs';

export const MODELS = { anthropic: 'claude-sonnet-4-5', openai: 'gpt-4o' };
const FLAVOURS = ['python', 'typescript', 'go'];

// The facts' own vocabulary: no word here occurs in the filler (quality-noise.mjs NOISE_WORDS).
const FACT_A = ['ledger', 'payout', 'invoice', 'webhook', 'tenant', 'quota', 'consent', 'refund', 'shipment', 'voucher', 'coupon', 'payroll',
  'escrow', 'audit', 'rebate', 'subscription', 'settlement', 'chargeback', 'royalty', 'warranty', 'dunning', 'remittance', 'fulfilment', 'loyalty'];
const FACT_B = ['reconciler', 'verifier', 'exporter', 'resolver', 'tracker', 'relay', 'renderer', 'planner', 'importer', 'rotator', 'batcher',
  'allocator', 'scheduler', 'notifier', 'archiver', 'normalizer', 'throttler', 'dispatcher', 'aggregator', 'snapshotter'];
const FACT_C = ['external_ref', 'idempotency_key', 'iban_hash', 'region_code', 'batch_token', 'vat_number', 'sku_code', 'partner_uid',
  'slot_index', 'tax_bucket', 'mandate_id', 'ledger_epoch', 'payer_ref', 'cycle_anchor'];
const PEOPLE = ['Priya', 'Tomasz', 'Ingrid', 'Kwame', 'Mei', 'Lucas', 'Sofia', 'Arjun', 'Noor', 'Henrik', 'Ayumi', 'Diego'];

/** Options a decision can choose between: [subject, chosen, rejected, chosenKey, rejectedKey]. */
const DECISIONS = {
  python: [
    ['the HTTP client', 'httpx', 'aiohttp', 'httpx', 'aiohttp'],
    ['JSON serialization', 'orjson', 'ujson', 'orjson', 'ujson'],
    ['the background task queue', 'Dramatiq', 'Celery', 'dramatiq', 'celery'],
    ['payload validation', 'pydantic models', 'marshmallow schemas', 'pydantic', 'marshmallow'],
    ['date handling', 'pendulum', 'arrow', 'pendulum', 'arrow'],
    ['the CSV import', 'polars', 'pandas', 'polars', 'pandas'],
    ['test data', 'factory_boy', 'model_bakery', 'factory_boy', 'model_bakery'],
  ],
  typescript: [
    ['request validation', 'zod', 'yup', 'zod', 'yup'],
    ['the package manager', 'pnpm', 'yarn', 'pnpm', 'yarn'],
    ['the job queue', 'BullMQ', 'Agenda', 'bullmq', 'agenda'],
    ['database access', 'Drizzle', 'TypeORM', 'drizzle', 'typeorm'],
    ['date handling', 'date-fns', 'moment', 'date-fns', 'moment'],
    ['outbound HTTP', 'undici', 'axios', 'undici', 'axios'],
    ['structured logging', 'pino', 'winston', 'pino', 'winston'],
    ['end-to-end tests', 'Playwright', 'Cypress', 'playwright', 'cypress'],
  ],
  go: [
    ['the HTTP router', 'go-chi', 'gorilla/mux', 'go-chi', 'gorilla/mux'],
    ['SQL access', 'sqlc', 'GORM', 'sqlc', 'gorm'],
    ['configuration loading', 'koanf', 'viper', 'koanf', 'viper'],
    ['fan-out concurrency', 'errgroup', 'a bare sync.WaitGroup', 'errgroup', 'sync.waitgroup'],
    ['schema migrations', 'goose', 'golang-migrate', 'goose', 'golang-migrate'],
    ['mocks', 'gomock', 'testify/mock', 'gomock', 'testify/mock'],
  ],
  any: [
    ['primary keys', 'UUIDv7', 'bigserial ids', 'uuidv7', 'bigserial'],
    ['pagination', 'keyset pagination', 'LIMIT/OFFSET', 'keyset', 'limit/offset'],
    ['job locking', 'SELECT … FOR UPDATE SKIP LOCKED', 'a Redis SETNX lock', 'skip locked', 'setnx'],
    ['timestamps', 'timestamptz columns', 'naive UTC datetimes', 'timestamptz', 'naive utc'],
    ['feature flags', 'Unleash', 'LaunchDarkly', 'unleash', 'launchdarkly'],
  ],
};

const SETTINGS = [
  ['BATCH_SIZE', () => [100, 2000, 50]],
  ['RETRY_LIMIT', () => [2, 12, 1]],
  ['TIMEOUT_MS', () => [1500, 30000, 500]],
  ['CACHE_TTL_SECONDS', () => [60, 7200, 30]],
  ['WORKER_CONCURRENCY', () => [2, 64, 1]],
  ['POOL_SIZE', () => [5, 80, 1]],
  ['MAX_PAYLOAD_KB', () => [256, 8192, 128]],
  ['REGION', () => ['eu-west-1', 'eu-central-1', 'us-east-2', 'ap-southeast-1', 'ca-central-1', 'sa-east-1']],
];

const TOOLSETS = {
  // Claude Code–like tools.
  code: {
    read: (p) => ['Read', { file_path: `/workspace/${p}` }],
    bash: (c) => ['Bash', { command: c, description: 'Run a shell command' }],
    grep: (pattern, p) => ['Grep', { pattern, path: p, output_mode: 'content', '-n': true }],
    edit: (p, o, n) => ['Edit', { file_path: `/workspace/${p}`, old_string: o, new_string: n }],
    write: (p, content) => ['Write', { file_path: `/workspace/${p}`, content }],
    listing: 'cat',
    editResult: (p, snippet) => `The file /workspace/${p} has been updated. Here's the result of running \`cat -n\` on a snippet of the edited file:\n${snippet}`,
    writeResult: (p) => `File created successfully at: /workspace/${p}`,
  },
  // SWE-agent–like tools.
  swe: {
    read: (p) => ['open_file', { path: p }],
    bash: (c) => ['run_command', { command: c }],
    grep: (pattern, p) => ['search_code', { query: pattern, dir: p }],
    edit: (p, o, n) => ['str_replace', { path: p, old_str: o, new_str: n }],
    write: (p, content) => ['create_file', { path: p, file_text: content }],
    listing: 'swe',
    editResult: (p, snippet) => `File updated. Please review the changes and make sure they are correct.\n[File: ${p}]\n${snippet}\n(Current directory: /workspace)`,
    writeResult: (p, lines) => `[File: ${p} (${lines} lines total)]\nFile created.\n(Open file: ${p})\n(Current directory: /workspace)`,
  },
};

const estimateTokens = (text) => Math.ceil(text.length / 3.6);

class SessionBuilder {
  constructor(seed, index, wording = 'original') {
    this.W = WORDINGS[wording];
    if (!this.W) throw new Error(`unknown wording ${JSON.stringify(wording)}; known: ${Object.keys(WORDINGS).join(', ')}`);
    this.r = rng(seed);
    this.flavour = FLAVOURS[index % FLAVOURS.length];
    this.format = index % 2 === 0 ? 'anthropic' : 'openai';
    this.tools = this.r.chance(0.5) ? TOOLSETS.code : TOOLSETS.swe;
    this.toolsetName = this.tools === TOOLSETS.code ? 'code' : 'swe';
    this.names = projectNames(this.r, this.flavour);
    this.turns = [];
    this.tokens = 0;
    this.toolTokens = 0;
    this.used = new Set();
    this.facts = [];
    this.callCount = 0;
  }

  /** A template out of a wording list; a list of one draws nothing. */
  one(list) {
    return list.length === 1 ? list[0] : this.r.pick(list);
  }

  // ------------------------------------------------------------ names for facts
  fresh(make) {
    for (let i = 0; i < 200; i += 1) {
      const v = make();
      if (!this.used.has(v)) {
        this.used.add(v);
        return v;
      }
    }
    throw new Error('fact vocabulary exhausted');
  }
  pair() {
    return this.fresh(() => `${this.r.pick(FACT_A)}_${this.r.pick(FACT_B)}`).split('_');
  }
  snake() {
    return this.pair().join('_');
  }
  func() {
    const [a, b] = this.pair();
    const verb = this.r.pick(['reconcile', 'verify', 'export', 'resolve', 'allocate', 'dispatch', 'normalize', 'archive']);
    if (this.flavour === 'python') return `${verb}_${a}_${b}`;
    return `${verb}${cap(a)}${cap(b)}`;
  }
  newPath(kind = 'module') {
    const [a, b] = this.pair();
    const dir = this.r.pick({ python: ['src/app/services', 'src/app/workers', 'src/app/integrations'], typescript: ['src/modules/billing', 'src/modules/integrations', 'src/jobs'], go: ['internal/billing', 'internal/integrations', 'internal/jobs'] }[this.flavour]);
    if (this.flavour === 'python') return kind === 'test' ? `tests/test_${a}_${b}.py` : `${dir}/${a}_${b}.py`;
    if (this.flavour === 'typescript') return `${dir}/${a}-${b}${kind === 'test' ? '.spec' : ''}.ts`;
    return `${dir}/${a}_${b}${kind === 'test' ? '_test' : ''}.go`;
  }

  // ------------------------------------------------------------ turns
  callId() {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
    let s = '';
    for (let i = 0; i < 22; i += 1) s += alphabet[this.r.int(0, alphabet.length - 1)];
    this.callCount += 1;
    return this.format === 'anthropic' ? `toolu_01${s}` : `call_${s}`;
  }
  push(turn) {
    this.turns.push(turn);
    if (turn.kind === 'results') {
      for (const res of turn.results) {
        const n = estimateTokens(res.text);
        this.tokens += n;
        this.toolTokens += n;
      }
    } else {
      this.tokens += estimateTokens(turn.text ?? '');
      for (const c of turn.calls ?? []) this.tokens += estimateTokens(JSON.stringify(c.input)) + 4;
    }
  }
  /** An assistant turn with calls, then their results. `calls` are [tool, input, resultText, isError?]. */
  act(text, calls) {
    const withIds = calls.map(([name, input, result, isError]) => ({ id: this.callId(), name, input, result, isError: Boolean(isError) }));
    this.push({ kind: 'assistant', text, calls: withIds.map(({ id, name, input }) => ({ id, name, input })) });
    this.push({ kind: 'results', results: withIds.map(({ id, result, isError }) => ({ id, text: result, isError })) });
  }
  /** An assistant turn without tools, then a user message (keeps Anthropic's alternation). */
  talk(assistantText, userText) {
    this.push({ kind: 'assistant', text: assistantText, calls: [] });
    this.push({ kind: 'user', text: userText });
  }

  // ------------------------------------------------------------ filler
  noiseCall() {
    const { r, names, flavour, tools } = this;
    const roll = r.next();
    if (roll < 0.38) {
      const file = r.pick(names.files);
      const [n, input] = tools.read(file);
      return [n, input, fileListing(r, flavour, names, file, tools.listing)];
    }
    if (roll < 0.56) {
      const cmd = { python: `python -m pytest ${r.pick(names.tests)} -q`, typescript: `npx jest ${r.pick(names.tests)}`, go: `go test ./${r.pick(names.tests).replace(/\/[^/]+$/, '')}/... -run . -v` }[flavour];
      const [n, input] = tools.bash(cmd);
      return [n, input, testRun(r, flavour, names)];
    }
    if (roll < 0.72) {
      const pattern = r.pick(names.funcs);
      const [n, input] = tools.grep(pattern, r.pick(['src', 'internal', '.']));
      return [n, input, grepOutput(r, flavour, names, pattern)];
    }
    if (roll < 0.86) {
      const [n, input] = tools.bash(r.pick(['git status', 'git log --oneline -n 25', 'git diff', 'ls -la', 'docker compose logs --tail=40 api', { python: 'pip install -e .[dev]', typescript: 'npm install', go: 'go mod download' }[flavour]]));
      return [n, input, shellOutput(r, flavour, names)];
    }
    const file = r.pick(names.files);
    const before = sourceLines(r, flavour, names, r.int(3, 10)).join('\n');
    const after = sourceLines(r, flavour, names, r.int(4, 16)).join('\n');
    const [n, input] = tools.edit(file, before, after);
    return [n, input, tools.editResult(file, this.snippet(after))];
  }
  snippet(text, around = 8) {
    const lines = [...sourceLines(this.r, this.flavour, this.names, around), ...text.split('\n'), ...sourceLines(this.r, this.flavour, this.names, around)];
    const start = this.r.int(10, 400);
    return lines.map((l, i) => `${String(start + i).padStart(6)}\t${l}`).join('\n');
  }
  noiseCalls() {
    const n = this.r.chance(0.22) ? this.r.int(2, 3) : 1;
    return Array.from({ length: n }, () => this.noiseCall());
  }
  noiseStep() {
    if (this.r.chance(0.04)) {
      this.talk(statusUpdate(this.r, this.names), userFollowup(this.r, this.names));
      return;
    }
    // Agents think aloud between calls: usually a few sentences, sometimes a longer analysis.
    const sentences = this.r.chance(0.4) ? this.r.int(5, 10) : this.r.int(2, 5);
    this.act(reasoning(this.r, this.names, sentences), this.noiseCalls());
  }

  // ------------------------------------------------------------ facts
  fact(category, check, where, extra = {}) {
    this.facts.push({ id: `${category}-${this.facts.filter((f) => f.category === category).length + 1}`, category, check, where, at: Number((this.tokens / this.target).toFixed(3)), ...extra });
  }

  errorBlock() {
    const { r, flavour, names } = this;
    const port = r.int(5400, 6900);
    const templates = {
      python: [
        () => { const c = `${this.snake()}_${r.pick(FACT_C)}_key`; return { lines: ['E   psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint "' + c + '"', `E   DETAIL:  Key (${c.replace(/_key$/, '').split('_').slice(-2).join('_')})=(${r.int(1000, 99999)}) already exists.`], terms: ['UniqueViolation', c] }; },
        () => { const k = this.fresh(() => `${r.pick(FACT_A)}_${r.pick(FACT_C)}`); return { lines: ['Traceback (most recent call last):', `  File "/workspace/${r.pick(names.files)}", line ${r.int(20, 400)}, in ${r.pick(names.funcs)}`, `    ${r.pick(names.words)} = row["${k}"]`, `KeyError: '${k}'`], terms: ['KeyError', k] }; },
        () => { const m = `app.${this.snake()}`; return { lines: ['Traceback (most recent call last):', `  File "/workspace/src/app/main.py", line ${r.int(3, 40)}, in <module>`, `    from ${m} import ${cap(r.pick(FACT_B))}`, `ModuleNotFoundError: No module named '${m}'`], terms: ['ModuleNotFoundError', m] }; },
        () => { const col = `${this.snake()}.${r.pick(FACT_C)}`; return { lines: [`E   sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) no such column: ${col}`], terms: ['OperationalError', col] }; },
        () => { const arg = this.fresh(() => `${r.pick(FACT_A)}_${r.pick(FACT_C)}`); return { lines: [`E   TypeError: ${r.pick(names.funcs)}() got an unexpected keyword argument '${arg}'`], terms: ['TypeError', arg] }; },
        () => { const host = `${this.pair().join('-')}.internal`; return { lines: [`requests.exceptions.ConnectTimeout: HTTPSConnectionPool(host='${host}', port=443): Max retries exceeded with url: /v1/${r.pick(names.words)}s (Caused by ConnectTimeoutError(<urllib3.connection.HTTPSConnection object at 0x7f${r.int(100000, 999999).toString(16)}>, 'Connection to ${host} timed out. (connect timeout=${r.int(2, 30)})'))`], terms: ['ConnectTimeout', host] }; },
        () => { const rev = r.int(0x10000000, 0xffffffff).toString(16) + r.int(0x1000, 0xffff).toString(16); return { lines: [`alembic.util.exc.CommandError: Can't locate revision identified by '${rev}'`], terms: ['CommandError', rev] }; },
      ],
      typescript: [
        () => { const code = r.pick(['2339', '2551']); const prop = this.fresh(() => `${r.pick(FACT_A)}${cap(r.pick(FACT_C).split('_')[0])}Id`); return { lines: [`${r.pick(names.files)}(${r.int(10, 300)},${r.int(3, 40)}): error TS${code}: Property '${prop}' does not exist on type '${r.pick(names.types)}'.`], terms: [`TS${code}`, prop] }; },
        () => { const fn = this.func(); return { lines: [`${r.pick(names.files)}(${r.int(10, 300)},${r.int(3, 40)}): error TS2554: Expected ${r.int(1, 2)} arguments, but got ${r.int(3, 4)}.`, `  In the call to '${fn}'.`], terms: ['TS2554', fn] }; },
        () => { const f = `${this.pair().join('-')}.js`; return { lines: [`node:internal/modules/esm/resolve:853`, `  throw new ERR_MODULE_NOT_FOUND(packageName, fileURLToPath(base), null);`, '', `Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/workspace/dist/jobs/${f}' imported from /workspace/dist/main.js`, `    at finalizeResolution (node:internal/modules/esm/resolve:${r.int(200, 300)}:11)`], terms: ['ERR_MODULE_NOT_FOUND', f] }; },
        () => ({ lines: [`Error: connect ECONNREFUSED 127.0.0.1:${port}`, `    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:${r.int(1500, 1700)}:16) {`, `  errno: -111,`, `  code: 'ECONNREFUSED',`, `  syscall: 'connect',`, `  address: '127.0.0.1',`, `  port: ${port}`, '}'], terms: ['ECONNREFUSED', `127.0.0.1:${port}`] }),
        () => { const idx = `${this.snake()}_${r.pick(FACT_C)}_1`; return { lines: [`MongoServerError: E11000 duplicate key error collection: app.${r.pick(FACT_A)}s index: ${idx} dup key: { ${r.pick(FACT_C)}: "${r.int(100000, 999999)}" }`], terms: ['E11000', idx] }; },
        () => { const field = this.fresh(() => `${r.pick(FACT_A)}${cap(r.pick(FACT_C).split('_')[0])}`); return { lines: ['PrismaClientKnownRequestError: ', `Invalid \`prisma.${r.pick(FACT_A)}.create()\` invocation:`, '', `Unique constraint failed on the fields: (\`${field}\`)`, `  code: 'P2002'`], terms: ['P2002', field] }; },
      ],
      go: [
        () => { const T = `${cap(this.pair()[0])}${cap(r.pick(FACT_B))}`; const m = cap(r.pick(['reconcile', 'flush', 'allocate', 'dispatch', 'settle'])); return { lines: ['panic: runtime error: invalid memory address or nil pointer dereference', `[signal SIGSEGV: segmentation violation code=0x1 addr=0x${r.int(16, 255).toString(16)} pc=0x${r.int(0x100000, 0xffffff).toString(16)}]`, '', `goroutine ${r.int(10, 300)} [running]:`, `github.com/acme/platform/internal/billing.(*${T}).${m}(0x0, {0x${r.int(0x100000, 0xffffff).toString(16)}, 0xc000${r.int(100000, 999999)}})`, `\t/workspace/internal/billing/${r.pick(names.words)}.go:${r.int(20, 300)} +0x${r.int(16, 255).toString(16)}`], terms: ['nil pointer dereference', `(*${T}).${m}`] }; },
        () => { const c = `${this.snake()}_${r.pick(FACT_C)}_key`; return { lines: [`    ${r.pick(names.tests).split('/').pop()}:${r.int(20, 300)}: insert: ERROR: duplicate key value violates unique constraint "${c}" (SQLSTATE 23505)`], terms: ['23505', c] }; },
        () => { const addr = `10.${r.int(0, 255)}.${r.int(0, 255)}.${r.int(1, 254)}:${port}`; return { lines: [`time=2026-03-0${r.int(1, 9)}T${r.int(10, 23)}:${r.int(10, 59)}:${r.int(10, 59)}Z level=ERROR msg="publish failed" err="dial tcp ${addr}: connect: connection refused"`], terms: ['connection refused', addr] }; },
        () => { const svc = `/${r.pick(FACT_A)}.v1.${cap(r.pick(FACT_A))}Service/${cap(r.pick(['Settle', 'Reconcile', 'Allocate', 'Export']))}${cap(r.pick(FACT_B))}`; this.used.add(svc); return { lines: [`    client_test.go:${r.int(20, 200)}: rpc error: code = DeadlineExceeded desc = context deadline exceeded (method ${svc})`], terms: ['DeadlineExceeded', svc] }; },
        () => { const T = `${cap(this.pair()[0])}${cap(r.pick(FACT_B))}`; const m = r.pick(['record', 'remember', 'track', 'index']); return { lines: ['fatal error: concurrent map writes', '', `goroutine ${r.int(10, 300)} [running]:`, `github.com/acme/platform/internal/jobs.(*${T}).${m}(...)`, `\t/workspace/internal/jobs/${r.pick(names.words)}.go:${r.int(20, 300)}`], terms: ['concurrent map writes', `(*${T}).${m}`] }; },
      ],
    }[flavour];
    const generic = [
      () => { const ctr = `${this.pair().join('-')}-${r.int(1, 9)}`; return { lines: [`${ctr} exited with code 137 (OOMKilled)`, `Error response from daemon: container ${ctr} is not running`], terms: ['OOMKilled', ctr] }; },
      () => { const host = `api.${this.pair().join('')}.io`; return { lines: [`HTTP/1.1 429 Too Many Requests`, `server: ${host}`, `retry-after: ${r.int(5, 90)}`, `x-ratelimit-remaining: 0`, '', `{"error":"rate_limited","message":"Too many requests to ${host}"}`], terms: ['429', host] }; },
    ];
    return (r.chance(0.8) ? r.pick(templates) : r.pick(generic))();
  }

  plantError() {
    const { r, flavour, names, tools, W } = this;
    const block = this.errorBlock();
    const inTests = r.chance(0.6);
    const cmd = inTests
      ? { python: `python -m pytest ${r.pick(names.tests)} -x -q`, typescript: r.chance(0.5) ? 'npx tsc --noEmit -p tsconfig.build.json' : `npx jest ${r.pick(names.tests)}`, go: `go test ./internal/... -run ${cap(r.pick(names.funcs))}` }[flavour]
      : { python: `python -m app.workers.${r.pick(names.words)}_sync --once`, typescript: 'node dist/main.js', go: 'go run ./cmd/api' }[flavour];
    const output = inTests ? testRun(r, flavour, names, { failing: true, extra: block.lines }) : [shellOutput(r, flavour, names), ...block.lines].join('\n');
    const [n, input] = tools.bash(cmd);
    this.act(reasoning(r, names, 1) + ' ' + r.pick(W.error.runLeads), [[n, input, output, true]]);
    const headline = block.lines.find((l) => l.includes(block.terms[0])) ?? block.lines[0];
    this.fact('error', { all: block.terms }, 'tool_result', { text: headline.trim() });
    const error = headline.trim().replace(/^E\s+/, '');
    const remark = r.chance(0.5) ? r.pick(W.error.quoted)({ error }) : r.pick(W.error.plain);
    this.act(`${remark} ${reasoning(r, names, 1)}`, this.noiseCalls());
  }

  plantPath() {
    const { r, flavour, names, tools, W } = this;
    const isTest = r.chance(0.25);
    const path = this.newPath(isTest ? 'test' : 'module');
    const purpose = r.pick(W.path.purposes);
    const content = sourceLines(r, flavour, names, r.int(15, 60)).join('\n');
    const said = r.pick(W.path.sentences)({ purpose, path, thought: () => reasoning(r, names, 1) });
    const text = W.path.created(said);
    if (r.chance(0.75)) {
      const [n, input] = tools.write(path, content);
      this.act(text, [[n, input, tools.writeResult(path, content.split('\n').length)]]);
      this.fact('path', { all: [path] }, 'tool_use', { text: `created ${path}` });
    } else {
      const before = sourceLines(r, flavour, names, 2).join('\n');
      const [n, input] = tools.edit(path, before, content.split('\n').slice(0, 12).join('\n'));
      this.act(W.path.edited(said), [[n, input, tools.editResult(path, this.snippet(content.split('\n').slice(0, 12).join('\n'), 4))]]);
      this.fact('path', { all: [path] }, 'tool_use', { text: `edited ${path}` });
    }
  }

  decisionOption() {
    const pool = [...DECISIONS[this.flavour], ...DECISIONS.any].filter((d) => !this.used.has(`decision:${d[0]}`));
    const d = this.r.pick(pool);
    this.used.add(`decision:${d[0]}`);
    return d;
  }

  plantDecision() {
    const { r, names, W } = this;
    const [subject, x, y, xk, yk] = this.decisionOption();
    const reason = r.pick(W.reasons);
    const text = r.pick(W.decisions)({ subject, x, y, reason });
    this.act(`${reasoning(r, names, 1)} ${text}`, this.noiseCalls());
    this.fact('decision', { all: [xk, yk] }, 'assistant', { text });
  }

  plantLocked() {
    const { r, names, W } = this;
    const [subject, x, y, xk] = this.decisionOption();
    const marker = r.pick(W.locked.lines)({ subject, x, y });
    const reason = r.pick(W.reasons);
    const lead = r.pick(W.locked.leads)({ reason });
    this.act(`${reasoning(r, names, 1)}\n\n${lead}\n${marker}\n\n${reasoning(r, names, 1)}`, this.noiseCalls());
    this.fact('locked', { all: [xk, subject.replace(/^(the|a|an) /, '')] }, 'assistant', { text: marker });
  }

  constraintText() {
    const { r, W } = this;
    const kind = r.int(0, 5);
    if (kind === 0) {
      const cmd = r.pick(['alembic downgrade', 'prisma migrate reset', 'terraform destroy', 'kubectl delete namespace', 'redis-cli FLUSHALL', 'git push --force']);
      const env = this.fresh(() => `${r.pick(['prod', 'staging', 'sandbox'])}-${r.pick(FACT_A)}-${r.int(1, 9)}`);
      return { text: r.pick(W.constraints.command)({ cmd, env }), terms: [cmd, env] };
    }
    if (kind === 1) {
      const fn = this.func();
      return { text: r.pick(W.constraints.signature)({ fn }), terms: [fn] };
    }
    if (kind === 2) {
      const [runtime, ver] = { python: ['Python', r.pick(['3.8', '3.9'])], typescript: ['Node', r.pick(['16', '18.12'])], go: ['Go', r.pick(['1.19', '1.20'])] }[this.flavour];
      this.used.add(`runtime:${runtime}`);
      return { text: r.pick(W.constraints.runtime)({ runtime, ver }), terms: [`${runtime} ${ver}`] };
    }
    if (kind === 3) {
      const env = this.fresh(() => `${r.pick(FACT_A).toUpperCase()}_${r.pick(['SIGNING_KEY', 'API_SECRET', 'WEBHOOK_SECRET', 'PRIVATE_TOKEN'])}`);
      return { text: r.pick(W.constraints.secret)({ env }), terms: [env] };
    }
    if (kind === 4) {
      const dir = this.fresh(() => `${r.pick(['vendor', 'generated', 'migrations/legacy'])}/${r.pick(FACT_A)}_${r.pick(FACT_B)}/`);
      return { text: r.pick(W.constraints.directory)({ dir }), terms: [dir] };
    }
    const flag = this.fresh(() => `ff_${r.pick(FACT_A)}_${r.pick(FACT_B)}_v${r.int(2, 4)}`);
    return { text: r.pick(W.constraints.flag)({ flag }), terms: [flag] };
  }

  plantConstraint() {
    const c = this.constraintText();
    this.talk(statusUpdate(this.r, this.names), this.r.chance(0.5) ? c.text : `${c.text}${this.W.followupJoin}${userFollowup(this.r, this.names)}`);
    this.fact('constraint', { all: c.terms }, 'user', { text: c.text });
  }

  plantPending() {
    const { r, names, W } = this;
    const kind = r.int(0, 4);
    let said;
    if (kind === 0) {
      const fn = this.func();
      said = this.one(W.pending.tasks.test)({ fn });
    } else if (kind === 1) {
      const ticket = this.fresh(() => `${r.pick(['PAY', 'BIL', 'OPS', 'PLAT'])}-${r.int(1000, 9999)}`);
      said = this.one(W.pending.tasks.changelog)({ ticket });
    } else if (kind === 2) {
      const col = this.fresh(() => `${r.pick(FACT_A)}_${r.pick(FACT_C)}`);
      said = this.one(W.pending.tasks.backfill)({ col });
    } else if (kind === 3) {
      const person = r.pick(PEOPLE);
      const mod = this.snake();
      said = this.one(W.pending.tasks.review)({ person, mod });
    } else {
      const test = this.fresh(() => `test_${r.pick(FACT_A)}_${r.pick(FACT_B)}`);
      said = this.one(W.pending.tasks.flaky)({ test });
    }
    const { task, terms } = said;
    const style = r.next();
    if (style < 0.45) {
      const text = r.pick(W.pending.agent)({ task });
      this.act(`${reasoning(r, names, 1)} ${text}`, this.noiseCalls());
      this.fact('pending', { all: terms }, 'assistant', { text });
    } else if (style < 0.8) {
      const text = r.pick(W.pending.user)({ task });
      this.talk(statusUpdate(r, names), text);
      this.fact('pending', { all: terms }, 'user', { text });
    } else {
      const text = this.one(W.pending.marker)({ task });
      this.act(`${reasoning(r, names, 1)}\n${text}`, this.noiseCalls());
      this.fact('pending', { all: terms }, 'assistant', { text });
    }
  }

  valueSpec() {
    const { r } = this;
    const [suffix, range] = r.pick(SETTINGS.filter(([s]) => !this.used.has(`setting:${s}`)));
    this.used.add(`setting:${suffix}`);
    const key = `${this.fresh(() => r.pick(FACT_A).toUpperCase())}_${suffix}`;
    const spec = range();
    const draw = typeof spec[0] === 'string' ? () => r.pick(spec) : () => String(spec[0] + spec[2] * r.int(0, Math.floor((spec[1] - spec[0]) / spec[2])));
    const values = [];
    while (values.length < 3) {
      const v = draw();
      if (values.every((u) => !u.includes(v) && !v.includes(u))) values.push(v);
    }
    const file = { python: r.pick(['config/settings.toml', '.env.example', 'src/app/core/settings.py']), typescript: r.pick(['.env.example', 'src/config/defaults.ts', 'config/default.yaml']), go: r.pick(['config/config.yaml', '.env.example', 'deploy/values.yaml']) }[this.flavour];
    return { key, values, file };
  }

  configLine(file, key, value) {
    if (file.endsWith('.toml') || file.endsWith('.py')) return `${key} = ${/^\d+$/.test(value) ? value : `"${value}"`}`;
    if (file.endsWith('.ts')) return `export const ${key} = ${/^\d+$/.test(value) ? value : `'${value}'`};`;
    if (file.endsWith('.yaml')) return `${key}: ${value}`;
    return `${key}=${value}`;
  }

  configSnippet(file, line) {
    const { r, names } = this;
    const other = () => this.configLine(file, `${r.pick(names.words).toUpperCase()}_${r.pick(['PAGE_SIZE', 'LOG_LEVEL', 'ENABLED', 'URL', 'LIMIT'])}`, String(r.int(1, 500)));
    const lines = [...Array.from({ length: r.int(4, 12) }, other), line, ...Array.from({ length: r.int(4, 12) }, other)];
    const start = r.int(1, 40);
    return lines.map((l, i) => `${String(start + i).padStart(6)}\t${l}`).join('\n');
  }

  setValue(spec, step, prev) {
    const { r, names, tools, W } = this;
    const value = spec.values[step];
    const line = this.configLine(spec.file, spec.key, value);
    const oldLine = prev === undefined ? `# ${spec.key}` : this.configLine(spec.file, spec.key, prev);
    const [n, input] = tools.edit(spec.file, oldLine, line);
    const call = [n, input, tools.editResult(spec.file, this.configSnippet(spec.file, line))];
    const v = { key: spec.key, value, prev, file: spec.file, thought: () => reasoning(r, names, 1) };
    if (step === 0) {
      const text = r.pick(W.value.first)(v);
      this.act(`${reasoning(r, names, 1)} ${text}`, [call]);
    } else if (r.chance(0.5)) {
      const ask = r.pick(W.value.asks)(v);
      this.talk(statusUpdate(r, names), ask);
      this.act(r.pick(W.value.acks)(v), [call]);
    } else {
      // Every variant is said before one is picked (a variant may draw a thought).
      this.act(r.pick(W.value.changes.map((say) => say(v))), [call]);
    }
  }

  // ------------------------------------------------------------ the session
  systemPrompt() {
    const { r, flavour } = this;
    const lang = { python: 'Python', typescript: 'TypeScript', go: 'Go' }[flavour];
    const toolNames = this.toolsetName === 'code'
      ? [['Read', 'Reads a file from the local filesystem. file_path must be absolute. Returns the content with line numbers (cat -n format).'],
        ['Bash', 'Executes a shell command in a persistent session with an optional timeout. Quote paths that contain spaces. Output over 30000 characters is truncated.'],
        ['Grep', 'Searches file contents with ripgrep. Supports full regex syntax; output_mode "content" shows matching lines.'],
        ['Edit', 'Performs an exact string replacement in a file. old_string must be unique in the file; read the file first.'],
        ['Write', 'Writes a file to the local filesystem, overwriting it if it exists.']]
      : [['open_file', 'Opens the file at the given path in the editor and shows up to 100 lines around line_number.'],
        ['run_command', 'Runs a bash command in the repository root and returns its output.'],
        ['search_code', 'Searches for query in all files under dir and returns matching lines with line numbers.'],
        ['str_replace', 'Replaces old_str with new_str in the file at path; old_str must match exactly once.'],
        ['create_file', 'Creates a new file at path with file_text as its content.']];
    const rules = ['Make minimal, focused changes; do not refactor unrelated code.', 'Run the relevant tests after every change.', 'Prefer reading code over guessing.',
      'Explain what you are about to do in one or two sentences before each tool call.', 'Never commit or push; the user reviews the diff.',
      'If a command needs network access, say so instead of retrying.', `Follow the project's existing ${lang} style and lint rules.`, 'Keep the user informed when something takes long.'];
    const picked = rules.filter(() => r.chance(0.7));
    return [`You are an expert ${lang} engineer working as an autonomous coding agent in the repository mounted at /workspace. You have shell access and the tools below.`,
      '# Tools', ...toolNames.map(([n, d]) => `## ${n}\n${d}`), '# Guidelines', ...picked.map((l) => `- ${l}`),
      `Today's environment: Linux, ${lang} toolchain installed, PostgreSQL and Redis available on localhost.`].join('\n\n');
  }

  build(target) {
    const { r, names, W } = this;
    this.target = target;
    const plan = [];
    const add = (n, lo, hi, kind) => {
      for (let i = 0; i < n; i += 1) plan.push({ at: lo + (hi - lo) * r.next(), kind });
    };
    add(3, 0.04, 0.6, 'error');
    add(4, 0.03, 0.6, 'path');
    add(2, 0.05, 0.55, 'decision');
    add(2, 0.05, 0.5, 'locked');
    add(2, 0.05, 0.5, 'constraint');
    add(2, 0.78, 0.92, 'pending');
    for (let i = 0; i < 2; i += 1) {
      const spec = this.valueSpec();
      const steps = r.chance(0.3) ? 3 : 2;
      plan.push({ at: 0.08 + 0.27 * r.next(), kind: 'value', spec, step: 0 });
      plan.push({ at: 0.45 + 0.25 * r.next(), kind: 'value', spec, step: 1 });
      if (steps === 3) plan.push({ at: 0.72 + 0.08 * r.next(), kind: 'value', spec, step: 2 });
      else spec.values = spec.values.slice(0, 2);
    }
    plan.sort((a, b) => a.at - b.at);

    // The task, with one constraint in it.
    const c = this.constraintText();
    const w = () => r.pick(names.words);
    // Every symptom is said before one is picked, and the file is drawn before the statement.
    const symptom = r.pick(W.task.symptoms.map((say) => say({ word: w })));
    const file = r.pick(names.files);
    this.push({ kind: 'user', text: r.pick(W.task.statements)({ symptom, constraint: c.text, file }) });
    this.fact('constraint', { all: c.terms }, 'user', { text: c.text, at: 0 });
    const opening = `${r.chance(0.35) ? `${this.one(W.task.goals)({ symptom })}\n\n` : ''}${reasoning(r, names, 2)}`;
    this.act(opening, this.noiseCalls());

    const values = new Map();
    while (this.tokens < target || plan.length) {
      const due = plan.length && plan[0].at * target <= this.tokens ? plan.shift() : null;
      if (!due) {
        if (this.tokens >= target && plan.length) {
          plan[0].at = 0; // finish the plan before the end
          continue;
        }
        this.noiseStep();
        continue;
      }
      if (due.kind === 'error') this.plantError();
      else if (due.kind === 'path') this.plantPath();
      else if (due.kind === 'decision') this.plantDecision();
      else if (due.kind === 'locked') this.plantLocked();
      else if (due.kind === 'constraint') this.plantConstraint();
      else if (due.kind === 'pending') this.plantPending();
      else if (due.kind === 'value') {
        this.setValue(due.spec, due.step, due.spec.values[due.step - 1]);
        const last = due.step === due.spec.values.length - 1;
        if (last) {
          this.fact('value', { near: [due.spec.key, due.spec.values[due.step], 80] }, due.step === 0 ? 'assistant' : 'assistant', {
            stale: due.spec.values.slice(0, due.step), text: `${due.spec.key}: ${due.spec.values.join(' → ')}`, firstAt: values.get(due.spec.key),
          });
        } else if (due.step === 0) values.set(due.spec.key, Number((this.tokens / target).toFixed(3)));
      }
      // A couple of ordinary steps between two planted facts.
      for (let i = r.int(1, 2); i > 0; i -= 1) this.noiseStep();
    }
    this.push({ kind: 'assistant', text: r.pick(['The fix is in and the focused tests pass locally.', 'Done for now: the change is implemented and the test suite is green.', 'All targeted tests pass. Let me know if you want anything else changed.']), calls: [] });
  }
}

function anthropicShape(turns) {
  return turns.map((t) => {
    if (t.kind === 'user') return { role: 'user', content: t.text };
    if (t.kind === 'assistant') {
      if (t.calls.length === 0) return { role: 'assistant', content: t.text };
      return { role: 'assistant', content: [{ type: 'text', text: t.text }, ...t.calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.input }))] };
    }
    return { role: 'user', content: t.results.map((res) => ({ type: 'tool_result', tool_use_id: res.id, content: res.text, ...(res.isError ? { is_error: true } : {}) })) };
  });
}

function openaiShape(turns) {
  return turns.flatMap((t) => {
    if (t.kind === 'user') return [{ role: 'user', content: t.text }];
    if (t.kind === 'assistant') {
      return [{ role: 'assistant', content: t.text, ...(t.calls.length ? { tool_calls: t.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input) } })) } : {}) }];
    }
    return t.results.map((res) => ({ role: 'tool', tool_call_id: res.id, content: res.text }));
  });
}

/**
 * One generated session: `{ name, format, model, system?, messages, facts, meta }`, in the
 * file format `--sessions` reads (Anthropic sessions carry `system` at the top level; OpenAI
 * ones as their first message).
 */
export function generateQualitySession(seed, index, { wording = 'original' } = {}) {
  const b = new SessionBuilder(seed * 1000 + index, index, wording);
  // In o200k tokens; Claude models are counted by the catalog's estimate, about a quarter more.
  const target = b.r.int(55_000, 120_000);
  b.build(target);
  const system = b.systemPrompt();
  const name = `${b.W.prefix}-${String(index + 1).padStart(2, '0')}-${b.flavour}-${b.format}`;
  const meta = { seed, index, flavour: b.flavour, toolset: b.toolsetName, targetTokens: target, estimatedToolShare: Number((b.toolTokens / b.tokens).toFixed(3)), ...(wording === 'original' ? {} : { wording }) };
  const facts = b.facts.map((f) => ({ ...f, id: `${name}/${f.id}` }));
  if (b.format === 'anthropic') return { name, format: 'anthropic', model: MODELS.anthropic, system, messages: anthropicShape(b.turns), facts, meta };
  return { name, format: 'openai', model: MODELS.openai, messages: [{ role: 'system', content: system }, ...openaiShape(b.turns)], facts, meta };
}

/** `options.wording`: 'original' (default) or 'paraphrase' (quality-wording.mjs); paraphrased sessions are named `para-…`. */
export function generateQualitySessions(seed, count, options = {}) {
  return Array.from({ length: count }, (_, i) => generateQualitySession(seed, i, options));
}

// Exposed for the sanity check of the report: the sentence filler used by the noise.
export { sentence };
