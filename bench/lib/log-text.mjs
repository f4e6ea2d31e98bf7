// Realistic shell and log output of a given size (a test run, a server log, a build, a directory
// listing, stack traces): what an agent's tool result of tens of megabytes holds, not one repeated
// character. Seeded, so every run posts the same text; ASCII, so its length in UTF-16 units is its
// size in bytes.
import { rng } from './random.mjs';

const SERVICES = ['http', 'db', 'queue', 'auth', 'cache', 'worker-3', 'scheduler'];
const ROUTES = ['/api/v1/orders', '/api/v1/users', '/api/v1/items', '/health', '/api/v1/invoices', '/static/app.js'];
const FILES = ['src/services/order.service.ts', 'src/controllers/user.controller.ts', 'src/lib/retry.ts', 'node_modules/pg/lib/client.js', 'src/app.module.ts'];
const WORDS = ['connection', 'timeout', 'retrying', 'request', 'completed', 'failed', 'cache', 'miss', 'user', 'session', 'refreshed', 'token', 'expired', 'queued', 'job'];

/** `bytes` characters of mixed log lines ending in a newline (cut at a line boundary, then padded with a last short line). */
export function logText(bytes, seed = 15) {
  const r = rng(seed);
  const hex = (n) => Array.from({ length: n }, () => '0123456789abcdef'[r.int(0, 15)]).join('');
  const pad = (n, w) => String(n).padStart(w, '0');
  const line = (i) => {
    const ts = `2026-11-28T${pad(3 + Math.floor(i / 3_600_000), 2)}:${pad(Math.floor(i / 60_000) % 60, 2)}:${pad(Math.floor(i / 1000) % 60, 2)}.${pad(i % 1000, 3)}Z`;
    switch (r.int(0, 9)) {
      case 0:
      case 1:
      case 2:
        return `${ts} INFO  [${r.pick(SERVICES)}] ${r.pick(['GET', 'POST', 'PUT'])} ${r.pick(ROUTES)}/${r.int(1, 99999)} ${r.pick([200, 200, 201, 204, 404, 500])} ${r.int(1, 900)}.${r.int(0, 9)}ms req_id=${hex(16)}`;
      case 3:
        return `${ts} WARN  [${r.pick(SERVICES)}] ${r.pick(WORDS)} ${r.pick(WORDS)} after ${r.int(1, 30)} attempts (${r.pick(WORDS)}=${hex(8)})`;
      case 4:
        return `${ts} ERROR [${r.pick(SERVICES)}] Error: ${r.pick(WORDS)} ${r.pick(WORDS)}\n    at ${r.pick(['Object.<anonymous>', 'OrderService.create', 'Client._handleErrorMessage', 'processTicksAndRejections'])} (/home/app/${r.pick(FILES)}:${r.int(1, 400)}:${r.int(1, 80)})\n    at async Promise.all (index ${r.int(0, 9)})`;
      case 5:
        return `${r.pick(FILES).replace('.ts', '.tsx')}(${r.int(1, 500)},${r.int(1, 80)}): error TS${r.int(2000, 2800)}: Type '${r.pick(['string', 'number', 'undefined'])}' is not assignable to type '${r.pick(['number', 'string', 'never'])}'.`;
      case 6:
        return `${r.pick(['drwxr-xr-x', '-rw-r--r--', '-rwxr-xr-x'])}  ${r.int(1, 9)} root root ${String(r.int(0, 999999)).padStart(7)} Nov ${r.int(1, 28)} ${pad(r.int(0, 23), 2)}:${pad(r.int(0, 59), 2)} ${r.pick(['src', 'dist', 'package.json', 'README.md', 'run.sh', 'node_modules', 'tsconfig.json'])}`;
      case 7:
        return `  ${r.pick(['PASS', 'PASS', 'FAIL', 'SKIP'])} ${r.pick(WORDS)} ${r.pick(WORDS)} when the ${r.pick(WORDS)} is ${r.pick(WORDS)} (${r.int(1, 2000)} ms)`;
      case 8:
        return `npm WARN deprecated ${r.pick(['inflight', 'glob', 'rimraf', 'uuid'])}@${r.int(1, 9)}.${r.int(0, 20)}.${r.int(0, 9)}: This module is not supported, and leaks memory.`;
      default:
        return `{"level":${r.pick([30, 40, 50])},"time":${1764300000000 + i},"pid":${r.int(100, 9999)},"msg":"${r.pick(WORDS)} ${r.pick(WORDS)}","sessionId":"${hex(8)}-${hex(4)}-${hex(4)}"}`;
    }
  };
  const lines = [];
  let size = 0;
  for (let i = 0; ; i += 1) {
    const next = `${line(i)}\n`;
    if (size + next.length > bytes) {
      lines.push(`${'.'.repeat(Math.max(0, bytes - size - 1))}\n`.slice(-(bytes - size)));
      break;
    }
    lines.push(next);
    size += next.length;
  }
  return lines.join('');
}
