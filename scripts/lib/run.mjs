import { spawn, spawnSync } from 'node:child_process';
import { root } from './prisma.mjs';

export const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

export function has(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** Runs a command with inherited output; resolves to its exit code. */
export function run(command, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit', ...options });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    child.on('error', () => resolve(127));
  });
}

export function step(message) {
  console.log(`\n▸ ${message}`);
}
