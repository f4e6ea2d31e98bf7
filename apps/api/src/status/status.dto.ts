import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { PRESET_NAMES } from '@compactor/compaction';
import { QueueDepth } from '../analytics/analytics.dto';
import { SCOPES } from '../auth/scopes';

/** libs/llm's SUMMARIZER_PROVIDERS, repeated so the API does not load the provider SDKs for a list of names. */
const SUMMARIZER_PROVIDERS = ['local', 'openai', 'anthropic', 'ollama'];

export class CallerView {
  @ApiProperty({ format: 'uuid', description: 'The tenant of the key that made this request.' })
  tenantId!: string;

  @ApiProperty({ format: 'uuid', description: 'The id of that key (as listed by GET /v1/keys).' })
  keyId!: string;

  @ApiProperty({ enum: SCOPES, isArray: true })
  scopes!: string[];
}

export class WorkerSummarizerView {
  @ApiProperty({ enum: SUMMARIZER_PROVIDERS, description: 'The summarizer this worker uses (COMPACTOR_SUMMARIZER).' })
  provider!: string;

  @ApiProperty({ example: 'claude-haiku-4-5' })
  model!: string;

  @ApiPropertyOptional({ nullable: true, type: String, description: 'Base URL without credentials or query; null for `local`.' })
  endpoint!: string | null;

  @ApiProperty({ description: 'Whether a provider key is configured (the key itself is never reported).' })
  keyConfigured!: boolean;

  @ApiProperty({ description: 'Per-attempt timeout of a summarizer call.' })
  timeoutMs!: number;

  @ApiProperty({ enum: ['healthy', 'failing', 'unknown'], description: '`local` is always healthy; a remote provider follows its latest call.' })
  health!: string;

  @ApiProperty({ example: 'Last call answered.' })
  healthDetail!: string;
}

export class LastJobView {
  @ApiProperty({ example: 'compact' })
  name!: string;

  @ApiProperty({ example: 'succeeded', description: 'The job status the handler reported (`succeeded`, `skipped`, `failed`…), `completed` when it reported none, `error` when it threw.' })
  outcome!: string;

  @ApiProperty({ format: 'date-time' })
  at!: string;
}

export class WorkerJobsView {
  @ApiProperty({ description: 'Jobs this process finished since it started.' })
  completed!: number;

  @ApiProperty({ description: 'Job attempts that threw (BullMQ retries them).' })
  failed!: number;

  @ApiPropertyOptional({ nullable: true, type: LastJobView })
  last!: LastJobView | null;
}

export class LlmErrorView {
  @ApiProperty({ enum: ['timeout', 'rate-limited', 'server', 'malformed', 'auth', 'bad-request', 'network', 'unexpected'] })
  kind!: string;

  @ApiProperty({ example: 'HTTP 429 rate limited', description: 'Short fixed text, secrets redacted.' })
  message!: string;
}

export class LlmProbeView {
  @ApiProperty({ enum: ['up', 'down', 'unknown'], description: 'up: 2xx; down: no answer, timeout, 5xx or 429; unknown: another status.' })
  state!: 'up' | 'down' | 'unknown';

  @ApiProperty({ type: String, format: 'date-time' })
  at!: string;
}

export class WorkerLlmView {
  @ApiProperty({ description: 'Summarizer calls since the worker started (after the provider retries).' })
  calls!: number;

  @ApiProperty()
  errors!: number;

  @ApiPropertyOptional({ nullable: true, type: String, format: 'date-time' })
  lastSuccessAt!: string | null;

  @ApiPropertyOptional({ nullable: true, type: String, format: 'date-time' })
  lastErrorAt!: string | null;

  @ApiPropertyOptional({ nullable: true, type: LlmErrorView })
  lastError!: LlmErrorView | null;

  @ApiPropertyOptional({ nullable: true, type: LlmProbeView, description: "The latest probe of the summarizer's list-models endpoint (made while an LLM outage holds compactions); absent before any." })
  probe?: LlmProbeView | null;
}

export class WorkerStatusView {
  @ApiProperty({ example: 'worker-host-4182-a1b2c3' })
  id!: string;

  @ApiProperty()
  hostname!: string;

  @ApiProperty()
  pid!: number;

  @ApiProperty({ format: 'date-time' })
  startedAt!: string;

  @ApiProperty({ format: 'date-time', description: 'Its latest heartbeat (every 10 s; a worker silent for 30 s is no longer listed).' })
  lastSeenAt!: string;

  @ApiProperty({ description: 'Jobs it runs at once per queue.' })
  concurrency!: number;

  @ApiProperty({ type: WorkerSummarizerView })
  summarizer!: WorkerSummarizerView;

  @ApiProperty({ type: WorkerJobsView })
  jobs!: WorkerJobsView;

  @ApiProperty({ type: WorkerLlmView })
  llm!: WorkerLlmView;
}

export class PresetTriggerView {
  @ApiProperty({ example: 0.8, description: 'Fraction of the base at which a compaction is scheduled (a session can override it).' })
  fraction!: number;

  @ApiProperty({ enum: ['budget', 'available'], description: '`available` is the budget minus system prompt, goal block and checkpoints (seed 004).' })
  base!: string;
}

export class PresetView {
  @ApiProperty({ enum: PRESET_NAMES })
  name!: string;

  @ApiProperty({ description: 'The preset of sessions that name none.' })
  isDefault!: boolean;

  @ApiProperty({ type: PresetTriggerView })
  trigger!: PresetTriggerView;
}

export class StatusResponse {
  @ApiProperty({ format: 'date-time' })
  checkedAt!: string;

  @ApiProperty({ type: CallerView })
  caller!: CallerView;

  @ApiProperty({ type: WorkerStatusView, isArray: true, description: 'Live workers (heartbeat within 30 s), oldest first. Shared by all tenants.' })
  workers!: WorkerStatusView[];

  @ApiProperty({ type: QueueDepth, description: 'The compaction queue now, shared by all tenants.' })
  queueDepth!: QueueDepth;

  @ApiProperty({ type: PresetView, isArray: true, description: 'The policy presets and their triggers.' })
  presets!: PresetView[];
}
