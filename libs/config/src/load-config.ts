import { z } from 'zod';

/** Startup stops on this error; its message lists every bad or missing variable at once. */
export class ConfigError extends Error {
  constructor(
    readonly app: string,
    readonly problems: string[],
  ) {
    super(`Invalid configuration for ${app}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export type Env = Record<string, string | undefined>;

/**
 * Validates the environment against an app's schema. This is the only place that reads
 * process.env; apps receive a typed, frozen config object.
 */
export function loadConfig<S extends z.ZodType>(app: string, schema: S, env: Env = process.env): z.infer<S> {
  // Empty strings mean "not set", as in most .env files.
  const cleaned: Env = {};
  for (const [key, value] of Object.entries(env)) cleaned[key] = value === '' ? undefined : value;
  const result = schema.safeParse(cleaned);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const name = issue.path.join('.') || '(root)';
      const received = cleaned[String(issue.path[0])];
      return received === undefined && issue.code === 'invalid_type'
        ? `${name}: is required but not set`
        : `${name}: ${issue.message}`;
    });
    throw new ConfigError(app, problems);
  }
  return Object.freeze(result.data) as z.infer<S>;
}
