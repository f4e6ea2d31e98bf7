// Loads .env (if present) under the real environment: Node's own dotenv parser
// (process.loadEnvFile, Node >= 20.12) never overrides a variable already set, so the
// environment wins. It reads `export KEY=`, single/double/backtick quotes, `#` comment
// lines, and a ` #` after an unquoted value as a comment (quote a value that holds one).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { root } from './prisma.mjs';

export function loadDotEnv(file = path.join(root, '.env')) {
  if (existsSync(file)) process.loadEnvFile(file);
}

export function maskUrl(raw) {
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return '<unparseable URL>';
  }
}
