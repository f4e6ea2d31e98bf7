import { createServiceLogger, PinoNestLogger, REDACTED_HEADERS } from '@compactor/config';
import type { DestinationStream, Logger } from 'pino';

export { PinoNestLogger, REDACTED_HEADERS };

export const LOGGER = Symbol('LOGGER');

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return createServiceLogger('api', level, destination);
}
