import type { AuditEntry, WorkerStatus } from './settings-schema';
import { describeAuditEntry, keyState, keyStatusText, parseKeyInput, parseNewKeyForm, parseTenantForm, PRESET_DESCRIPTIONS, providerSummary, triggerText } from './settings-view';

const worker = (provider: WorkerStatus['summarizer']['provider'], health: WorkerStatus['summarizer']['health'], model = 'compactor-local'): WorkerStatus => ({
  id: `w-${provider}-${health}`,
  hostname: 'host',
  pid: 1,
  startedAt: '2026-11-23T10:00:00Z',
  lastSeenAt: '2026-11-23T10:00:10Z',
  concurrency: 4,
  summarizer: { provider, model, endpoint: null, keyConfigured: false, timeoutMs: 60000, health, healthDetail: '' },
  jobs: { completed: 0, failed: 0, last: null },
  llm: { calls: 0, errors: 0, lastSuccessAt: null, lastErrorAt: null, lastError: null },
});

describe('providerSummary', () => {
  it('says when no worker runs', () => {
    expect(providerSummary([])).toMatchObject({ state: 'no-workers', providers: 'none' });
  });

  it('names the summarizer once however many workers use it', () => {
    expect(providerSummary([worker('local', 'healthy'), worker('local', 'healthy')])).toEqual({ state: 'healthy', providers: 'local', text: '2 workers; the summarizer answers.' });
  });

  it('lets the worst state win and lists different summarizers', () => {
    const s = providerSummary([worker('local', 'healthy'), worker('openai', 'failing', 'gpt-4o-mini'), worker('anthropic', 'unknown', 'claude-haiku-4-5')]);
    expect(s).toEqual({ state: 'failing', providers: 'local + openai gpt-4o-mini + anthropic claude-haiku-4-5', text: "3 workers; the summarizer's last call failed on 1." });
    expect(providerSummary([worker('ollama', 'unknown', 'llama3.1:8b')]).state).toBe('unknown');
  });
});

describe('presets', () => {
  it('describes every preset and its trigger base', () => {
    expect(Object.keys(PRESET_DESCRIPTIONS)).toEqual(['balanced', 'factor3', 'watermark', 'two-layer', 'offload-compact', 'checkpoint-aging']);
    expect(triggerText({ fraction: 0.5, base: 'budget' })).toBe('50% of the budget');
    expect(triggerText({ fraction: 0.8, base: 'available' })).toBe('80% of the available budget');
  });
});

describe('form parsing', () => {
  it('takes a pasted key without its surrounding spaces', () => {
    expect(parseKeyInput('  ck_abc123 \n')).toEqual({ ok: true, value: 'ck_abc123' });
    expect(parseKeyInput('')).toMatchObject({ ok: false, field: 'apiKey' });
    expect(parseKeyInput('ck_abc 123')).toMatchObject({ ok: false, field: 'apiKey' });
    expect(parseKeyInput(null)).toMatchObject({ ok: false });
  });

  it('needs a name and a known scope for a new key, and drops duplicates and unknown scopes', () => {
    expect(parseNewKeyForm(' ci ', ['read', 'read', 'ingest', 'root'])).toEqual({ ok: true, value: { name: 'ci', scopes: ['read', 'ingest'] } });
    expect(parseNewKeyForm('  ', ['read'])).toMatchObject({ ok: false, field: 'name' });
    expect(parseNewKeyForm('x'.repeat(101), ['read'])).toMatchObject({ ok: false, field: 'name' });
    expect(parseNewKeyForm('ci', ['root'])).toMatchObject({ ok: false, field: 'scopes' });
  });

  it('takes an optional lifetime in whole days, 1 to 3650; empty means never', () => {
    expect(parseNewKeyForm('ci', ['read'], ' 90 ')).toEqual({ ok: true, value: { name: 'ci', scopes: ['read'], expiresInDays: 90 } });
    expect(parseNewKeyForm('ci', ['read'], '')).toEqual({ ok: true, value: { name: 'ci', scopes: ['read'] } });
    for (const bad of ['0', '3651', '1.5', '-3', 'soon', '1e3']) expect([bad, parseNewKeyForm('ci', ['read'], bad)]).toEqual([bad, expect.objectContaining({ ok: false, field: 'expiresInDays' })]);
  });
});

describe('key status', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  it('revoked wins over expired; an expiry passed is expired; a future one is shown with its date (and year when not this one)', () => {
    expect(keyState({ revokedAt: '2026-11-01T00:00:00Z', expiresAt: '2026-11-02T00:00:00Z' }, now)).toBe('revoked');
    expect(keyState({ revokedAt: null, expiresAt: '2026-11-25T12:00:00Z' }, now)).toBe('expired');
    expect(keyState({ revokedAt: null, expiresAt: '2026-11-25T12:00:01Z' }, now)).toBe('active');
    expect(keyStatusText({ revokedAt: null, expiresAt: null }, now)).toBe('Active');
    expect(keyStatusText({ revokedAt: null, expiresAt: '2026-12-24T09:30:00Z' }, now)).toBe('Active, expires Dec 24, 09:30 UTC');
    expect(keyStatusText({ revokedAt: null, expiresAt: '2027-02-23T00:00:00Z' }, now)).toBe('Active, expires Feb 23 2027, 00:00 UTC');
    expect(keyStatusText({ expiresAt: '2026-11-20T08:00:00Z' }, now)).toBe('Expired Nov 20, 08:00 UTC');
  });
});

describe('parseTenantForm', () => {
  const form = (values: Record<string, string>) => (name: string) => values[name] ?? null;

  it('turns empty fields into null (the environment default) and sends the policy only when it changed', () => {
    expect(parseTenantForm(form({ anthropicBaseUrl: ' ', openaiBaseUrl: '', timeoutMs: '', defaultPolicy: 'factor3', currentPolicy: 'factor3' }))).toEqual({
      ok: true,
      value: { proxy: { anthropicBaseUrl: null, openaiBaseUrl: null, timeoutMs: null } },
    });
    expect(parseTenantForm(form({ anthropicBaseUrl: 'https://a.example.com', timeoutMs: '30000', defaultPolicy: 'two-layer', currentPolicy: '' }))).toEqual({
      ok: true,
      value: { proxy: { anthropicBaseUrl: 'https://a.example.com', openaiBaseUrl: null, timeoutMs: 30000 }, defaultPolicy: 'two-layer' },
    });
    expect(parseTenantForm(form({ defaultPolicy: '', currentPolicy: 'balanced' }))).toMatchObject({ ok: true, value: { defaultPolicy: null } });
  });

  it('names every bad field', () => {
    expect(parseTenantForm(form({ anthropicBaseUrl: 'ftp://x', openaiBaseUrl: 'not a url', timeoutMs: '12', defaultPolicy: 'nope' }))).toEqual({
      ok: false,
      problems: {
        'proxy.anthropicBaseUrl': expect.stringContaining('http(s) URL'),
        'proxy.openaiBaseUrl': expect.stringContaining('http(s) URL'),
        'proxy.timeoutMs': expect.stringContaining('1000 to 3600000'),
        defaultPolicy: 'Choose one of the presets.',
      },
    });
    expect(parseTenantForm(form({ timeoutMs: '1.5' }))).toMatchObject({ ok: false, problems: { 'proxy.timeoutMs': expect.any(String) } });
  });
});

describe('describeAuditEntry', () => {
  const entry = (action: AuditEntry['action'], data: Record<string, unknown>, targetType: AuditEntry['targetType'] = 'tenant', targetId = 't-1'): AuditEntry => ({
    id: '1',
    keyId: 'k-1',
    action,
    targetType,
    targetId,
    data,
    createdAt: '2026-11-25T12:00:00Z',
  });

  it('lists each tenant setting that changed, from and to', () => {
    const line = describeAuditEntry(
      entry('tenant.updated', { changes: { 'proxy.timeoutMs': { from: null, to: 30000 }, defaultPolicy: { from: { preset: 'balanced', overrides: {} }, to: null } } }),
    );
    expect(line).toEqual({ action: 'Tenant settings changed', target: 'tenant', detail: 'proxy.timeoutMs: default → 30000; defaultPolicy: balanced → default' });
  });

  it('names keys by their prefix and sessions by their id', () => {
    expect(describeAuditEntry(entry('api-key.created', { name: 'ci', prefix: 'ck_ab12', scopes: ['read'] }, 'api-key', 'uuid'))).toEqual({ action: 'API key created', target: 'ck_ab12…', detail: '“ci” read' });
    expect(describeAuditEntry(entry('compaction.undone', { jobId: 'j', restoredVersion: 3, version: 5 }, 'session', 'run-1'))).toEqual({ action: 'Compaction undone', target: 'run-1', detail: 'version 3' });
  });

  it('says how big an expired session was and which retention removed it', () => {
    const line = describeAuditEntry(entry('session.expired', { messages: 120, lastActivityAt: '2026-10-01T00:00:00Z', retentionDays: 30 }, 'session', 'old-run'));
    expect(line).toEqual({ action: 'Session expired (retention)', target: 'old-run', detail: '120 messages, idle over 30 days' });
  });
});
