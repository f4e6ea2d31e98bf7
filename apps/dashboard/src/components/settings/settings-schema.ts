import { z } from 'zod';
import type { components } from '../../api/schema';
import { queueDepthSchema } from '../../lib/overview-schema';

type Schemas = components['schemas'];

/** Runtime checks of the Settings page's API answers, annotated with the generated types (a contract change fails the typecheck). */
const scope = z.enum(['ingest', 'read', 'admin']);
const instant = z.string().min(1);
const presetName = z.enum(['balanced', 'factor3', 'watermark', 'two-layer', 'offload-compact', 'checkpoint-aging']);

const apiKeyView: z.ZodType<Schemas['ApiKeyView']> = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  scopes: z.array(scope),
  createdAt: instant,
  revokedAt: instant.nullable().optional(),
  expiresAt: instant.nullable().optional(),
});

export const apiKeyListSchema: z.ZodType<Schemas['ApiKeyList']> = z.object({ keys: z.array(apiKeyView) });

export const createdApiKeySchema: z.ZodType<Schemas['CreatedApiKey']> = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  scopes: z.array(scope),
  createdAt: instant,
  revokedAt: instant.nullable().optional(),
  expiresAt: instant.nullable().optional(),
  key: z.string().min(1),
});

export const revokedApiKeySchema = apiKeyView;

const workerStatus: z.ZodType<Schemas['WorkerStatusView']> = z.object({
  id: z.string(),
  hostname: z.string(),
  pid: z.number(),
  startedAt: instant,
  lastSeenAt: instant,
  concurrency: z.number(),
  summarizer: z.object({
    provider: z.enum(['local', 'openai', 'anthropic', 'ollama']),
    model: z.string(),
    endpoint: z.string().nullable().optional(),
    keyConfigured: z.boolean(),
    timeoutMs: z.number(),
    health: z.enum(['healthy', 'failing', 'unknown']),
    healthDetail: z.string(),
  }),
  jobs: z.object({
    completed: z.number(),
    failed: z.number(),
    last: z.object({ name: z.string(), outcome: z.string(), at: instant }).nullable().optional(),
  }),
  llm: z.object({
    calls: z.number(),
    errors: z.number(),
    lastSuccessAt: instant.nullable().optional(),
    lastErrorAt: instant.nullable().optional(),
    lastError: z
      .object({ kind: z.enum(['timeout', 'rate-limited', 'server', 'malformed', 'auth', 'bad-request', 'network', 'unexpected']), message: z.string() })
      .nullable()
      .optional(),
  }),
});

/** GET /v1/status/caller: the saved key's tenant, id and scopes (any live key may ask). */
export const callerSchema: z.ZodType<Schemas['CallerView']> = z.object({ tenantId: z.string(), keyId: z.string(), scopes: z.array(scope) });
export type CallerView = Schemas['CallerView'];

export const statusSchema: z.ZodType<Schemas['StatusResponse']> = z.object({
  checkedAt: instant,
  caller: callerSchema,
  workers: z.array(workerStatus),
  queueDepth: queueDepthSchema,
  presets: z.array(z.object({ name: presetName, isDefault: z.boolean(), trigger: z.object({ fraction: z.number(), base: z.enum(['budget', 'available']) }) })),
});

export type StatusResponse = Schemas['StatusResponse'];
export type WorkerStatus = Schemas['WorkerStatusView'];
export type ApiKeyView = Schemas['ApiKeyView'];
export type PresetView = Schemas['PresetView'];

const policyView = z.object({ preset: presetName, overrides: z.record(z.string(), z.unknown()) });

export const tenantSettingsSchema: z.ZodType<Schemas['TenantSettingsView']> = z.object({
  id: z.string(),
  name: z.string(),
  proxy: z.object({
    anthropicBaseUrl: z.string().nullable().optional(),
    openaiBaseUrl: z.string().nullable().optional(),
    timeoutMs: z.number().nullable().optional(),
  }),
  proxyDefaults: z.object({ anthropicBaseUrl: z.string(), openaiBaseUrl: z.string(), timeoutMs: z.number() }),
  allowPrivateUpstreams: z.boolean(),
  defaultPolicy: policyView.nullable().optional(),
  limits: z.object({
    requestsPerMinutePerKey: z.number().nullable(),
    requestsPerMinute: z.number().nullable(),
    appendedTokensPerMinute: z.number().nullable(),
    summarizerTokensPerDay: z.number().nullable(),
    summarizerCostPerDayUsd: z.number().nullable(),
    sessionRetentionDays: z.number().nullable(),
  }),
  limitDefaults: z.object({
    requestsPerMinutePerKey: z.number(),
    requestsPerMinute: z.number(),
    appendedTokensPerMinute: z.number(),
    summarizerTokensPerDay: z.number(),
    summarizerCostPerDayUsd: z.number(),
    sessionRetentionDays: z.number(),
  }),
  spendToday: z.object({ since: instant, summarizerTokens: z.number(), summarizerCostUsd: z.number() }),
});
export type TenantSettings = z.infer<typeof tenantSettingsSchema>;

const auditEntry = z.object({
  id: z.string(),
  keyId: z.string().nullable().optional(),
  action: z.enum(['api-key.created', 'api-key.revoked', 'snapshot.restored', 'compaction.undone', 'session.deleted', 'session.expired', 'session.updated', 'tenant.updated']),
  targetType: z.enum(['api-key', 'session', 'tenant']),
  targetId: z.string(),
  data: z.record(z.string(), z.unknown()),
  createdAt: instant,
});

export const auditPageSchema: z.ZodType<Schemas['AuditPage']> = z.object({ entries: z.array(auditEntry), nextCursor: z.string().nullable().optional() });
export type AuditEntry = z.infer<typeof auditEntry>;
export const PRESET_CHOICES = presetName.options;
