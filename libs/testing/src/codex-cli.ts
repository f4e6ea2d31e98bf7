import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * The Codex CLI (`@openai/codex`, a devDependency; its native binary ships in the optional platform
 * package `@openai/codex-<platform>`) run offline against a loopback server: `codex exec` with a
 * temporary CODEX_HOME whose `config.toml` points a `model_providers` entry (wire_api "responses")
 * at the given base URL, with its own network features off (checked with `--strict-config`, which
 * refuses unknown keys): no update check, no web search tool, no analytics, no feedback uploads, no
 * OpenTelemetry export, no retries.
 */

export interface CodexRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The agent's last message (`--output-last-message`). */
  lastMessage?: string;
  durationMs: number;
}

export interface CodexOptions {
  /** The provider's base URL (`<proxy>/v1/proxy/openai/v1`, or a relay in front of it). */
  baseUrl: string;
  prompt: string;
  /** The working directory the agent's shell commands run in. */
  cwd: string;
  /** Sent with every request (the provider's `http_headers`). */
  headers?: Record<string, string>;
  model?: string;
  /** The provider key it sends upstream (default: a dummy one). */
  apiKey?: string;
  timeoutMs?: number;
}

/** The `config.toml` a run uses: the provider block README's proxy section shows, and the network features off. */
export function codexConfig(options: Pick<CodexOptions, 'baseUrl' | 'headers' | 'model'>): string {
  const toml = (v: string) => JSON.stringify(v);
  const headers = Object.entries(options.headers ?? {})
    .map(([name, value]) => `${toml(name)} = ${toml(value)}`)
    .join(', ');
  return [
    `model = ${toml(options.model ?? 'gpt-5-codex')}`,
    'model_provider = "compactor"',
    'check_for_update_on_startup = false',
    'web_search = "disabled"',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
    '[otel]',
    'exporter = "none"',
    '',
    '[model_providers.compactor]',
    'name = "Compactor"',
    `base_url = ${toml(options.baseUrl)}`,
    'wire_api = "responses"',
    'env_key = "OPENAI_API_KEY"',
    `http_headers = { ${headers} }`,
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
  ].join('\n');
}

/** The installed CLI's launcher (`bin/codex.js`), after checking that the platform package with the native binary is there. */
export function codexLauncher(): string {
  const arch = process.arch === 'x64' || process.arch === 'arm64' ? process.arch : undefined;
  let platformFound = false;
  if (arch && (process.platform === 'linux' || process.platform === 'darwin' || process.platform === 'win32')) {
    try {
      platformFound = existsSync(dirname(require.resolve(`@openai/codex-${process.platform}-${arch}/package.json`)));
    } catch {
      platformFound = false;
    }
  }
  if (!platformFound) throw new Error(`Codex CLI's native binary is missing for ${process.platform}-${process.arch}: run npm install (the platform package is an optional dependency of @openai/codex)`);
  return join(dirname(require.resolve('@openai/codex/package.json')), 'bin', 'codex.js');
}

/** Runs `codex exec --strict-config -s danger-full-access -o <file> <prompt>` to completion (killed at the deadline). */
export function runCodex(options: CodexOptions): Promise<CodexRun> {
  const home = mkdtempSync(join(tmpdir(), 'compactor-codex-home-'));
  writeFileSync(join(home, 'config.toml'), codexConfig(options));
  const lastFile = join(home, 'last-message.txt');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    CODEX_HOME: home,
    LANG: 'C.UTF-8',
    OPENAI_API_KEY: options.apiKey ?? 'sk-offline-test',
  };
  const started = Date.now();
  const timeoutMs = options.timeoutMs ?? 120_000;
  return new Promise<CodexRun>((resolve, reject) => {
    const args = [codexLauncher(), 'exec', '--strict-config', '--skip-git-repo-check', '-s', 'danger-full-access', '-o', lastFile, options.prompt];
    const child = spawn(process.execPath, args, { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => {
      stderr += `\n[killed after ${timeoutMs} ms]`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      rmSync(home, { recursive: true, force: true });
      reject(error);
    });
    child.once('close', (exitCode, signal) => {
      clearTimeout(timer);
      const lastMessage = existsSync(lastFile) ? readFileSync(lastFile, 'utf8') : undefined;
      rmSync(home, { recursive: true, force: true });
      resolve({ exitCode, signal, stdout, stderr, lastMessage, durationMs: Date.now() - started });
    });
  });
}
