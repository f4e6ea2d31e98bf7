import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { CanonicalMessage, countableParts } from '@compactor/compaction';
import { combineCounts, ModelSpec, TokenCountPool } from '@compactor/tokens';

/**
 * Counts canonical messages once, at ingest. All texts of a batch go to the pool in one
 * call: short ones are counted inline, big ones on worker threads, so one 1 MB tool
 * result does not stall other requests.
 */
@Injectable()
export class MessageTokenCounter implements OnModuleDestroy {
  private readonly pool = new TokenCountPool();

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
