import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * The Claude Code CLI (`@anthropic-ai/claude-code`, a devDependency) run offline against a
 * loopback server, as shared/TOOLCHAIN.md ("Verified turn 2") describes: no network beyond the
 * given base URL, a temporary HOME, non-essential traffic and the auto-updater off.
 */

/** The CLI's JSON result (`--output-format json`), the fields tests read. */
export interface ClaudeCodeResult {
  type: string;
  subtype: string;
  is_error: boolean;
  result: string;
  num_turns: number;
  stop_reason?: string;
  [field: string]: unknown;
}

export interface ClaudeCodeRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout parsed, when it is the JSON result. */
  result?: ClaudeCodeResult;
  durationMs: number;
}

export interface ClaudeCodeOptions {
  /** `ANTHROPIC_BASE_URL`: the proxy's `/v1/proxy/anthropic` (or a relay in front of it). */
  baseUrl: string;
  prompt: string;
  /** The working directory the CLI's tools act in. */
  cwd: string;
  /** Sent with every request (`ANTHROPIC_CUSTOM_HEADERS`, one `Name: value` a line). */
  headers?: Record<string, string>;
  /** The provider key it sends upstream (default: a dummy one; the fake upstream does not check it). */
  apiKey?: string;
  allowedTools?: string;
  timeoutMs?: number;
  /** More environment variables (nothing else of the test's environment is passed on). */
  env?: Record<string, string>;
}

/**
 * The native binary of the installed CLI: the platform package's (what the package's postinstall
 * links to `bin/claude.exe`; npm may skip that script, see `allowScripts`), else `bin/claude.exe`.
 */
export function claudeCodeBinary(): string {
  const arch = process.arch === 'x64' || process.arch === 'arm64' ? process.arch : undefined;
  const candidates = arch && process.platform !== 'win32' ? [`${process.platform}-${arch}`, `${process.platform}-${arch}-musl`] : [];
  for (const platform of candidates) {
    try {
      const binary = join(dirname(require.resolve(`@anthropic-ai/claude-code-${platform}/package.json`)), 'claude');
      if (existsSync(binary)) return binary;
    } catch {
      // not installed for this platform: try the next
    }
  }
  const wrapper = join(dirname(require.resolve('@anthropic-ai/claude-code/package.json')), 'bin', 'claude.exe');
  // The package ships a small placeholder there until its postinstall copies the native binary over it.
  if (existsSync(wrapper) && statSync(wrapper).size > 1_000_000) return wrapper;
  throw new Error(`Claude Code's native binary is missing for ${process.platform}-${process.arch}: run npm install (the platform package is an optional dependency of @anthropic-ai/claude-code)`);
}

/** Runs `claude -p <prompt> --output-format json --allowedTools <tools>` to completion (killed at the deadline). */
export function runClaudeCode(options: ClaudeCodeOptions): Promise<ClaudeCodeRun> {
  const home = mkdtempSync(join(tmpdir(), 'compactor-claude-home-'));
  const headers = Object.entries(options.headers ?? {})
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    LANG: 'C.UTF-8',
    ANTHROPIC_BASE_URL: options.baseUrl,
    ANTHROPIC_API_KEY: options.apiKey ?? 'sk-ant-offline-test',
    ...(headers ? { ANTHROPIC_CUSTOM_HEADERS: headers } : {}),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    ...options.env,
  };
  const started = Date.now();
  return new Promise<ClaudeCodeRun>((resolve, reject) => {
    const child = spawn(claudeCodeBinary(), ['-p', options.prompt, '--output-format', 'json', '--allowedTools', options.allowedTools ?? 'Bash Read'], {
      cwd: options.cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => {
      stderr += `\n[killed after ${options.timeoutMs ?? 120_000} ms]`;
      child.kill('SIGKILL');
    }, options.timeoutMs ?? 120_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      rmSync(home, { recursive: true, force: true });
      reject(error);
    });
    child.once('close', (exitCode, signal) => {
      clearTimeout(timer);
      rmSync(home, { recursive: true, force: true });
      let result: ClaudeCodeResult | undefined;
      try {
        result = JSON.parse(stdout) as ClaudeCodeResult;
      } catch {
        result = undefined;
      }
      resolve({ exitCode, signal, stdout, stderr, result, durationMs: Date.now() - started });
    });
  });
}
