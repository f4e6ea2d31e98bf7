import type { WorkerStatus } from './settings-schema';
import { parseKeyInput, parseNewKeyForm, PRESET_DESCRIPTIONS, providerSummary, triggerText } from './settings-view';

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
});
