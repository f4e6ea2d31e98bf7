import { z } from 'zod';

// Fields shared by the apps' config schemas. Each app composes its own schema from these.

const urlWithProtocols = (protocols: string[], example: string) =>
  z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    },
    { message: `must be a URL like ${example}` },
  );

export const databaseUrl = urlWithProtocols(['postgres:', 'postgresql:'], 'postgresql://user:pass@host:5432/db');
export const redisUrl = urlWithProtocols(['redis:', 'rediss:'], 'redis://127.0.0.1:6379');
export const httpUrl = urlWithProtocols(['http:', 'https:'], 'http://127.0.0.1:3000');
export const port = z.coerce.number().int().min(1).max(65535);
export const host = z.string().min(1);
export const logLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
export const positiveInt = z.coerce.number().int().positive();
