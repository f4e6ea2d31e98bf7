import { FaultStack, RunningApp, startFaultStack } from '@compactor/testing';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const here = __dirname;
const python = spawnSync('python3', ['--version'], { encoding: 'utf8' });
const havePython = !python.error && python.status === 0;

/** Runs python3 with the client importable; resolves with its exit code and output (never rejects on a non-zero exit). */
function runPython(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'python3',
      args,
      { cwd: here, env: { PATH: process.env.PATH ?? '', PYTHONPATH: here, PYTHONDONTWRITEBYTECODE: '1', PYTHONIOENCODING: 'utf-8', ...env }, timeout: 120_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe('Python client files', () => {
  it('compactor_client/types.py matches the committed OpenAPI document', () => {
    const regenerated = execFileSync(process.execPath, [join(here, 'scripts/generate-types.mjs'), '--stdout'], { encoding: 'utf8' });
    if (regenerated !== readFileSync(join(here, 'compactor_client/types.py'), 'utf8')) {
      throw new Error('clients/python/compactor_client/types.py is out of date with apps/api/openapi.json. Run `node clients/python/scripts/generate-types.mjs` and commit the result.');
    }
  });

  it('the README shows the example the test runs, verbatim', () => {
    const readme = readFileSync(join(here, 'README.md'), 'utf8');
    const example = readFileSync(join(here, 'examples/append_context_compact_undo.py'), 'utf8');
    expect(readme).toContain('```python\n' + example + '```');
  });
});

if (!havePython) {
  describe('Python client against the real API', () => {
    it.skip(`skipped: no python3 on this machine (${python.error?.message ?? python.stderr}); install Python 3 to run clients/python's tests`, () => undefined);
  });
} else {
  /**
   * The Python client (clients/python) against the built API and worker processes, as `npm start`
   * runs them: its README example run as a script, then its unittest suite (the same example with
   * assertions, sessions list, snapshot/restore, an idempotent retry and the API's errors).
   */
  describe('Python client against the real API', () => {
    let stack: FaultStack;
    let env: Record<string, string>;
    let worker: RunningApp;

    beforeAll(async () => {
      stack = await startFaultStack('client_py');
      const api = await stack.startApi();
      worker = await stack.startWorker();
      env = { COMPACTOR_URL: api.url, COMPACTOR_API_KEY: stack.key };
    }, 60_000);
    afterAll(async () => {
      await stack?.close();
    }, 60_000);

    it('the README example runs as written: append → context → compact → undo', async () => {
      const sessionId = `client-py-example-${randomBytes(4).toString('hex')}`;
      const run = await runPython(['examples/append_context_compact_undo.py', sessionId], env);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      const lines = run.stdout.trim().split('\n');
      expect(lines).toHaveLength(5);
      expect(lines[0]).toMatch(/^appended seq 1\.\.10; context \d+ tokens$/);
      expect(lines[1]).toMatch(/^context: 10 messages, \d+ tokens$/);
      expect(lines[2]).toMatch(/^compaction succeeded: \d+ → \d+ tokens \(version 1\)$/);
      expect(lines[3]).toMatch(/^undone: version 2 restores version 0, \d+ tokens$/);
      expect(lines[4]).toMatch(/^404 session_not_found: /);
    }, 120_000);

    it('wait_for_job on a trigger folded into a job that had not started waits for that job and returns it', async () => {
      // No worker for a moment: the first compaction waits in BullMQ, and the second folds into it.
      await worker.stop();
      const sessionId = `client-py-fold-${randomBytes(4).toString('hex')}`;
      const setUp = await runPython(
        [
          '-c',
          [
            'import json, sys',
            'from compactor_client import Compactor',
            'c = Compactor(sys.argv[1], sys.argv[2])',
            'log = lambda r: "\\n".join(f"{r} {i} INFO request served in {(i * 37) % 250} ms" for i in range(150))',
            'messages = [{"role": "user", "content": "Which replica is slowest?"}]',
            'for r in ["api-1", "api-2", "api-3", "api-4"]:',
            '    messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": "call_" + r, "type": "function", "function": {"name": "read_log", "arguments": "{}"}}]})',
            '    messages.append({"role": "tool", "tool_call_id": "call_" + r, "content": log(r)})',
            'messages.append({"role": "assistant", "content": "api-3."})',
            'c.append(sys.argv[3], messages, format="openai", model="gpt-4o", context_window=16000, output_reserve=2000, policy={"preset": "balanced", "overrides": {"maskKeepLatestTurns": 2}})',
            'first = c.compact(sys.argv[3])["job"]',
            'second = c.compact(sys.argv[3])["job"]',
            'print(json.dumps({"first": first, "second": second}))',
          ].join('\n'),
          env.COMPACTOR_URL,
          env.COMPACTOR_API_KEY,
          sessionId,
        ],
        env,
      );
      expect({ code: setUp.code, stderr: setUp.stderr }).toEqual({ code: 0, stderr: '' });
      const { first, second } = JSON.parse(setUp.stdout) as { first: { id: string }; second: { id: string } };
      expect(second).toMatchObject({ status: 'skipped', supersededBy: first.id });

      const waiting = runPython(
        ['-c', 'import json, sys\nfrom compactor_client import Compactor\nprint(json.dumps(Compactor(sys.argv[1], sys.argv[2]).wait_for_job(sys.argv[3], interval=0.05)))', env.COMPACTOR_URL, env.COMPACTOR_API_KEY, second.id],
        env,
      );
      worker = await stack.startWorker();
      const waited = await waiting;
      expect({ code: waited.code, stderr: waited.stderr }).toEqual({ code: 0, stderr: '' });
      expect(JSON.parse(waited.stdout)).toMatchObject({ id: first.id, status: 'succeeded', supersededBy: null });
    }, 120_000);

    it('its unittest suite passes against the API, nothing skipped', async () => {
      const run = await runPython(['-m', 'unittest', 'discover', '-s', 'tests', '-v'], env);
      if (run.code !== 0) throw new Error(`python3 -m unittest failed (${run.code}):\n${run.stderr}\n${run.stdout}`);
      expect(run.stderr).toMatch(/Ran [1-9]\d* tests/);
      expect(run.stderr).toMatch(/\nOK\n?$/);
      expect(run.stderr).not.toMatch(/skipped/);
    }, 180_000);
  });
}
