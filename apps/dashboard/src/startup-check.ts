import { ConfigError } from '@compactor/config';
import { getDashboardConfig } from './config';

/** A bad environment stops the server with one message listing every problem, instead of a 500 on every page. */
export function assertConfigOrExit(): void {
  try {
    getDashboardConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    process.exit(1);
  }
}
