import { LoggerService } from '@nestjs/common';
import pino, { DestinationStream, Logger } from 'pino';

/** Headers that carry credentials: never written to a log. */
export const REDACTED_HEADERS = ['authorization', 'x-api-key', 'x-compactor-key', 'cookie', 'proxy-authorization', 'api-key'];

export const LOGGER = Symbol('LOGGER');

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'api' },
      redact: {
        paths: [...REDACTED_HEADERS.map((h) => `req.headers["${h}"]`), 'res.headers["set-cookie"]'],
        censor: '[redacted]',
      },
    },
    destination,
  );
}

/** Routes Nest's own log lines (bootstrap, route map, errors) through pino. */
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
