import { createHash, randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A new key: `ck_` + 40 base62 characters (~238 bits). Shown once, stored only as its hash. */
export function generateApiKey(): string {
  const bytes = randomBytes(40);
  let body = '';
  for (const byte of bytes) body += ALPHABET[byte % 62];
  return `ck_${body}`;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Enough of the key to tell keys apart in a listing, never enough to use it. */
export function keyPrefix(key: string): string {
  return key.slice(0, 10);
}
