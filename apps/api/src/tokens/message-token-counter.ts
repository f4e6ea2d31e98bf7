import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { CanonicalMessage, countableParts } from '@compactor/compaction';
import { combineCounts, ModelSpec, TokenCountPool } from '@compactor/tokens';

/**
 * Counts canonical messages once, at ingest. All texts of a batch go to the pool in one
 * call: short ones are counted inline, big ones on worker threads, so one 1 MB tool
 * result does not stall other requests.
 */
/** Distinct repeated contents whose totals are kept (oldest dropped first). */
const MAX_REPEATED = 5_000;

@Injectable()
export class MessageTokenCounter implements OnModuleDestroy {
  private readonly pool = new TokenCountPool();
  /** Totals of what clients send again with every request (system prompts, tool schemas), by model and content. */
  private readonly repeated = new Map<string, number>();

  /** Starts the pool's threads with o200k's rank tables (the encoding of every current model) loaded. */
  warm(): Promise<void> {
    return this.pool.warm('o200k_base');
  }

  /** `offThread`: every text is counted on the pool's threads, none on this one (see TokenCountPool.count). */
  async count(messages: CanonicalMessage[], spec: ModelSpec, options: { offThread?: boolean } = {}): Promise<number[]> {
    const parts = messages.map(countableParts);
    const texts = parts.flatMap((p) => p.texts);
    const counts = await this.pool.count(texts, spec, options);
    let next = 0;
    return parts.map((p) => {
      const textTokens = counts.slice(next, next + p.texts.length);
      next += p.texts.length;
      return combineCounts({ textTokens, images: p.images, opaqueJson: p.opaqueJson }, spec);
    });
  }

  /** The total tokens of messages a client sends again and again (a system prompt, tool schemas): counted once per content. */
  async countRepeated(messages: CanonicalMessage[], spec: ModelSpec): Promise<number> {
    const key = `${spec.id}\u0000${createHash('sha1').update(JSON.stringify(messages)).digest('base64url')}`;
    const hit = this.repeated.get(key);
    if (hit !== undefined) return hit;
    const total = (await this.count(messages, spec)).reduce((a, b) => a + b, 0);
    if (this.repeated.size >= MAX_REPEATED) this.repeated.delete(this.repeated.keys().next().value as string);
    this.repeated.set(key, total);
    return total;
  }

  /** The tokens of a request's tool schemas (SPEC.md "Budget"): their JSON counted as one system text; 0 for none. */
  countToolSchemas(tools: unknown[], spec: ModelSpec): Promise<number> {
    if (tools.length === 0) return Promise.resolve(0);
    return this.countRepeated([{ role: 'system', blocks: [{ type: 'text', text: JSON.stringify(tools) }] }], spec);
  }

  /**
   * At least each message's token count, without tokenizing: a token of the byte-level encodings covers at least one
   * UTF-8 byte, so a text's byte length bounds its count; images and opaque blocks are estimated as `count` does.
   */
  upperBounds(messages: CanonicalMessage[], spec: ModelSpec): number[] {
    return messages.map((m) => {
      const p = countableParts(m);
      return combineCounts({ textTokens: p.texts.map((t) => Buffer.byteLength(t, 'utf8')), images: p.images, opaqueJson: p.opaqueJson }, spec);
    });
  }

  async onModuleDestroy(): Promise<void> {
    await this.pool.close();
  }
}
