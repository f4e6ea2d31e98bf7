import { Injectable, OnModuleDestroy } from '@nestjs/common';
import type { Request, Response } from 'express';
import { answerAssembler } from './answer-assembler';
import type { AnswerHandler } from './conversation-recorder';
import { passThroughPath } from './pass-through-path';
import type { UpstreamSettings } from './proxy-settings';
import type { ProxyProvider } from './provider-errors';
import { clientHeaders, UpstreamClient, UpstreamExchange, upstreamHeaders } from './upstream';

/**
 * The proxy's way to the provider: builds the upstream request from the client's (path, query, headers, the tenant's
 * base URL and timeout), sends it over the kept-alive connections of one UpstreamClient (which maps a refused or silent
 * upstream to 502/504), and relays the upstream's answer to the client byte for byte while the recorder hears of it.
 * What is forwarded (the compacted body) and what is recorded are decided by ProxyService.
 */
@Injectable()
export class UpstreamForwarder implements OnModuleDestroy {
  private readonly upstream = new UpstreamClient();

  onModuleDestroy(): void {
    this.upstream.close();
  }

  /** A proxied request (`path` is the provider's endpoint) with `body`, the client's query and headers; the answer uncompressed. */
  send(provider: ProxyProvider, upstream: UpstreamSettings, req: Request, path: string, body: Buffer): Promise<UpstreamExchange> {
    const query = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?')) : '';
    return this.upstream.send({
      provider,
      baseUrl: upstream.baseUrl[provider],
      path: `${path}${query}`,
      method: 'POST',
      // The answer is read as it passes, so it must come uncompressed.
      headers: upstreamHeaders(req.headers, { 'accept-encoding': 'identity', 'content-type': 'application/json' }),
      body,
      timeoutMs: upstream.timeoutMs,
    });
  }

  /** Any other provider path: the client's method, path, headers and body as received. */
  sendAsReceived(provider: ProxyProvider, upstream: UpstreamSettings, req: Request): Promise<UpstreamExchange> {
    const path = passThroughPath(upstream.baseUrl[provider], req.originalUrl.slice(`/v1/proxy/${provider}`.length) || '/');
    const body = Buffer.isBuffer(req.body) && req.body.length > 0 ? req.body : undefined;
    return this.upstream.send({ provider, baseUrl: upstream.baseUrl[provider], path, method: req.method, headers: upstreamHeaders(req.headers), body, timeoutMs: upstream.timeoutMs });
  }

  /**
   * The upstream's status, headers and body go to the client as they are, bytes piped (never
   * re-serialized); `answer` hears of the end of the answer, assembled when it was a complete 2xx.
   */
  relay(provider: ProxyProvider, res: Response, exchange: UpstreamExchange, headers: Record<string, string>, answer?: AnswerHandler): Promise<void> {
    const upstream = exchange.response;
    const status = upstream.statusCode ?? 502;
    res.statusCode = status;
    for (const [name, value] of Object.entries(clientHeaders(upstream.headers))) res.setHeader(name, value);
    for (const [name, value] of Object.entries(headers)) {
      const theirs = upstream.headers[name];
      // A header both send (Server-Timing) keeps the upstream's entries too.
      res.setHeader(name, theirs === undefined || !name.startsWith('server-timing') ? value : [...[theirs].flat(), value].join(', '));
    }
    res.flushHeaders();
    const assembler = answer && status >= 200 && status < 300 ? answerAssembler(answer.shape ?? provider, answer.stream) : undefined;
    return new Promise<void>((resolve) => {
      if (assembler) upstream.on('data', (chunk: Buffer) => assembler.push(chunk));
      upstream.on('end', () => answer?.onEnd(assembler?.message(), status, res.destroyed, assembler?.inputTokens()));
      upstream.on('error', () => undefined);
      upstream.on('close', () => {
        // Cut short (reset, or our timeout between two chunks): the client's answer is cut short too.
        if (!upstream.complete) res.destroy();
        resolve();
      });
      res.on('close', () => {
        if (!res.writableFinished) exchange.abort();
      });
      upstream.pipe(res);
    });
  }
}
