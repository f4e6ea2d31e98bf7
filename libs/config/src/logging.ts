import type { LoggerService } from '@nestjs/common';
import pino, { DestinationStream, Logger, LoggerOptions } from 'pino';

/** Headers that carry credentials: never written to a log. */
export const REDACTED_HEADERS = ['authorization', 'x-api-key', 'x-compactor-key', 'cookie', 'proxy-authorization', 'api-key'];

/**
 * The JSON logger of a Compactor process (`service`: api, worker), with one redaction list for every
 * process. `mixin` adds fields to every line (the worker: the job and session a line belongs to).
 */
export function createServiceLogger(service: string, level: string, destination?: DestinationStream, mixin?: LoggerOptions['mixin']): Logger {
  return pino(
    {
      level,
      base: { service },
      redact: {
        paths: [...REDACTED_HEADERS.map((h) => `req.headers["${h}"]`), 'res.headers["set-cookie"]'],
        censor: '[redacted]',
      },
      ...(mixin ? { mixin } : {}),
    },
    destination,
  );
}

/** Routes Nest's own log lines (bootstrap, route map, services' Logger) through pino. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}
  log(message: unknown, context?: string) {
    this.logger.info({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string) {
    this.logger.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string) {
    this.logger.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string) {
    this.logger.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string) {
    this.logger.trace({ context }, String(message));
  }
}
