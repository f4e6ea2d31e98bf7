// Loads .env (if present) under the real environment: variables already set win.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { root } from './prisma.mjs';

export function loadDotEnv(file = path.join(root, '.env')) {
  if (!existsSync(file)) return {};
  const values = {};
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq < 1) continue;
    const key = line.slice(0, eq).trim().replace(/^export\s+/, '');
    let value = line.slice(eq + 1).trim();
    if ((value.startsWith('"') && value.endsWith('"')) || (value.startsWith("'") && value.endsWith("'"))) value = value.slice(1, -1);
    values[key] = value;
  }
  for (const [key, value] of Object.entries(values)) if (process.env[key] === undefined) process.env[key] = value;
  return values;
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
