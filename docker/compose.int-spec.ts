// Checks the Docker assets without a Docker engine: `docker compose config` validates the compose
// files (interpolation, schema, `depends_on` targets), and the Dockerfiles are read statically,
// since nothing here can build them.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const repoRoot = path.resolve(__dirname, '..');
const APPS = ['api', 'worker', 'dashboard'] as const;
const BASE_IMAGE = 'node:20-bookworm-slim';
const COMPOSE = 'docker/compose.yml';
const COMPOSE_DEV = 'docker/compose.dev.yml';
const SERVICES = ['postgres', 'redis', 'migrate', 'api', 'worker', 'dashboard'];

const read = (relative: string) => readFileSync(path.join(repoRoot, relative), 'utf8');

// ---------------------------------------------------------------- compose implementation

interface Compose {
  command?: string[];
  reasons: string[];
}

function run(argv: string[], env: NodeJS.ProcessEnv = process.env) {
  const result = spawnSync(argv[0], argv.slice(1), { cwd: repoRoot, env, encoding: 'utf8', timeout: 25_000 });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim();
  return { status: result.status, output: result.error ? String(result.error.message) : output };
}

/** The Compose v2 plugin if present, else the standalone v1 binary (Debian's docker-compose). */
function findCompose(): Compose {
  const reasons: string[] = [];
  for (const command of [['docker', 'compose'], ['docker-compose']]) {
    const { status, output } = run([...command, 'version']);
    if (status === 0) return { command, reasons };
    reasons.push(`\`${command.join(' ')} version\` failed (${output.split('\n')[0] || `exit ${status}`})`);
  }
  return { reasons };
}

const compose = findCompose();

/** The caller's environment minus anything that would change how the files render. */
function composeEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (/^(POSTGRES_|COMPOSE_|COMPACTOR_)/.test(key)) delete env[key];
  return { ...env, ...extra };
}

// An empty env file, so that a developer's .env cannot make the result depend on the machine
// (docker-compose 1.x refuses /dev/null: "is not a file").
const scratch = mkdtempSync(path.join(tmpdir(), 'compose-spec-'));
const emptyEnvFile = path.join(scratch, 'empty.env');
writeFileSync(emptyEnvFile, '');
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function composeConfig(files: string[], env: NodeJS.ProcessEnv) {
  const argv = [...compose.command!, '--env-file', emptyEnvFile, ...files.flatMap((f) => ['-f', f]), 'config', '--quiet'];
  return { command: argv.join(' '), ...run(argv, env) };
}

// ---------------------------------------------------------------- tiny parsers

/** A service's block in a compose file: its header line up to the next line at its indent or less. */
function serviceBlock(yaml: string, service: string): string | undefined {
  const lines = yaml.split('\n');
  const servicesAt = lines.findIndex((l) => l === 'services:');
  const start = lines.findIndex((l, i) => i > servicesAt && l === `  ${service}:`);
  if (servicesAt < 0 || start < 0) return undefined;
  const end = lines.findIndex((l, i) => i > start && /^ {0,2}\S/.test(l));
  return lines.slice(start, end < 0 ? undefined : end).join('\n');
}

interface Instruction {
  keyword: string;
  args: string;
}

/** Dockerfile instructions with line continuations joined and comments dropped. */
function instructions(dockerfile: string): Instruction[] {
  const result: Instruction[] = [];
  let current = '';
  for (const raw of dockerfile.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#') || (line === '' && current === '')) continue;
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    current += line;
    const match = /^(\S+)\s*([\s\S]*)$/.exec(current.trim());
    if (match) result.push({ keyword: match[1].toUpperCase(), args: match[2] });
    current = '';
  }
  return result;
}

/** COPY/ADD sources taken from the build context (the repository root), not from another stage. */
function contextSources(instruction: Instruction): string[] {
  const flags = instruction.args.match(/^(?:--\S+\s+)*/)?.[0] ?? '';
  if (/--from=/.test(flags)) return [];
  const rest = instruction.args.slice(flags.length).trim();
  const parts: string[] = rest.startsWith('[') ? JSON.parse(rest) : rest.split(/\s+/);
  return parts.slice(0, -1);
}

/** Does a .dockerignore pattern exclude this context path (or one of its parents)? */
function ignoredBy(patterns: string[], source: string): string | undefined {
  const clean = (p: string) => p.replace(/^\.?\//, '').replace(/\/$/, '');
  const candidates = clean(source)
    .split('/')
    .map((_, i, parts) => parts.slice(0, i + 1).join('/'));
  const segment = (glob: string) =>
    glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '[^/]*')
      .replace(/\?/g, '[^/]');
  return patterns.find((pattern) => {
    // `**/` matches any number of directories; `*` and `?` stay within one path segment.
    const regex = new RegExp(`^${clean(pattern).split('**/').map(segment).join('(?:.*/)?')}$`);
    return candidates.some((c) => regex.test(c));
  });
}

function projectJson(name: string): { name: string; targets?: Record<string, unknown> } | undefined {
  for (const group of ['apps', 'libs']) {
    for (const dir of readdirSync(path.join(repoRoot, group))) {
      const file = path.join(repoRoot, group, dir, 'project.json');
      if (!existsSync(file)) continue;
      const project = JSON.parse(readFileSync(file, 'utf8'));
      if (project.name === name) return project;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------- compose files

describe('docker/compose*.yml', () => {
  const base = read(COMPOSE);
  const dev = read(COMPOSE_DEV);

  it('build each image from its Dockerfile, with the repository root as context', () => {
    for (const app of APPS) {
      const dockerfile = `docker/${app}.Dockerfile`;
      expect(base).toContain(`dockerfile: ${dockerfile}`);
      expect(existsSync(path.join(repoRoot, dockerfile))).toBe(true);
    }
    // Contexts are relative to the compose file's directory.
    const contexts = [...base.matchAll(/^\s*context:\s*(\S+)\s*$/gm)].map((m) => path.resolve(repoRoot, 'docker', m[1]));
    expect(contexts.length).toBeGreaterThanOrEqual(APPS.length);
    for (const context of contexts) expect(context).toBe(repoRoot);
  });

  it('define every service, wired in start-up order', () => {
    for (const service of SERVICES) expect(serviceBlock(base, service)).toBeDefined();
    expect(serviceBlock(base, 'migrate')).toMatch(/prisma", "migrate", "deploy"/);
    for (const service of ['api', 'worker']) {
      expect(serviceBlock(base, service)).toMatch(/migrate:\n\s+condition: service_completed_successfully/);
      expect(serviceBlock(base, service)).toMatch(/redis:\n\s+condition: service_healthy/);
    }
    expect(serviceBlock(base, 'dashboard')).toContain('COMPACTOR_API_URL: http://api:3000');
    // Scaling needs replicas that do not collide on a name or a host port.
    expect(serviceBlock(base, 'worker')).not.toMatch(/container_name:|ports:/);
    // deploy.replicas for the API and the worker, from the environment, one by default.
    expect(serviceBlock(base, 'api')).toMatch(/deploy:\n\s+replicas: \$\{COMPACTOR_API_REPLICAS:-1\}/);
    expect(serviceBlock(base, 'worker')).toMatch(/deploy:\n\s+replicas: \$\{COMPACTOR_WORKER_REPLICAS:-1\}/);
    // The API's replicas each publish a host port: a range variable, no fixed container name.
    expect(serviceBlock(base, 'api')).not.toMatch(/container_name:/);
  });

  it('take secrets from the environment and publish dev infrastructure on loopback only', () => {
    const code = `${base}\n${dev}`.replace(/^\s*#.*$/gm, '');
    const required = /\$\{POSTGRES_PASSWORD:\?[^}]*\}/g;
    expect(code.match(required)?.length).toBeGreaterThan(0);
    // Apart from the variable's key, every use must be the required form: never a literal or a default.
    expect(code.replace(required, '<required>').replace(/POSTGRES_PASSWORD: <required>/g, '')).not.toContain(
      'POSTGRES_PASSWORD',
    );
    expect(code).not.toMatch(/^\s*\w*(PASSWORD|SECRET|API_KEY|TOKEN)\w*:\s*["']?[^\s$"']/m);
    expect(base).toMatch(/COMPACTOR_INIT_API_KEY: \$\{COMPACTOR_INIT_API_KEY:-\}/);

    for (const service of ['postgres', 'redis']) expect(serviceBlock(base, service)).not.toMatch(/ports:/);
    const devPorts = [...dev.matchAll(/^\s+- "([^"]+)"$/gm)].map((m) => m[1]);
    expect(devPorts).toHaveLength(2);
    for (const mapping of devPorts) expect(mapping).toMatch(/^127\.0\.0\.1:/);
  });

  const combinations = [
    { label: 'compose.yml', files: [COMPOSE] },
    { label: 'compose.yml + compose.dev.yml', files: [COMPOSE, COMPOSE_DEV] },
  ];

  if (compose.command) {
    it.each(combinations)('pass `docker compose config` ($label)', ({ files }) => {
      const result = composeConfig(files, composeEnv({ POSTGRES_PASSWORD: 'x' }));
      expect(result).toEqual({ ...result, status: 0 });
    });

    it('refuse to render without POSTGRES_PASSWORD', () => {
      const result = composeConfig([COMPOSE], composeEnv({}));
      expect(result.status).not.toBe(0);
      expect(result.output).toContain('set POSTGRES_PASSWORD');
    });
  } else {
    it('exist and reference the Dockerfiles and services (`docker compose config` unavailable)', () => {
      console.warn(
        `docker compose config could not be run, so the compose files were only checked statically: ${compose.reasons.join('; ')}`,
      );
      for (const file of [COMPOSE, COMPOSE_DEV]) expect(existsSync(path.join(repoRoot, file))).toBe(true);
      for (const app of APPS) expect(base).toContain(`dockerfile: docker/${app}.Dockerfile`);
      for (const service of SERVICES) expect(serviceBlock(base, service)).toBeDefined();
      for (const service of ['postgres', 'redis']) expect(serviceBlock(dev, service)).toBeDefined();
    });
  }
});

// ---------------------------------------------------------------- Dockerfiles

describe.each(APPS)('docker/%s.Dockerfile', (app) => {
  const file = `docker/${app}.Dockerfile`;
  const steps = instructions(read(file));
  const finalStage = steps.slice(steps.map((s) => s.keyword).lastIndexOf('FROM'));
  const ignoreFile = `${file}.dockerignore`;
  const ignorePatterns = existsSync(path.join(repoRoot, ignoreFile))
    ? read(ignoreFile)
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith('#') && !l.startsWith('!'))
    : [];

  it(`builds every stage on ${BASE_IMAGE}`, () => {
    const froms = steps.filter((s) => s.keyword === 'FROM');
    expect(froms.length).toBeGreaterThanOrEqual(2);
    for (const from of froms) expect(from.args.replace(/^--platform=\S+\s+/, '').split(/\s+/)[0]).toBe(BASE_IMAGE);
  });

  it('copies only paths that exist in the build context and are not ignored', () => {
    const sources = steps.filter((s) => s.keyword === 'COPY' || s.keyword === 'ADD').flatMap(contextSources);
    expect(sources).toEqual(expect.arrayContaining(['package.json', 'package-lock.json']));
    for (const source of sources) {
      if (/[*?[]/.test(source)) continue;
      expect({ source, exists: existsSync(path.join(repoRoot, source)) }).toEqual({ source, exists: true });
      if (source !== '.') expect({ source, ignoredBy: ignoredBy(ignorePatterns, source) }).toEqual({ source });
    }
  });

  it('keeps host builds out of the context', () => {
    for (const produced of ['node_modules', 'dist', 'apps/dashboard/.next', '.env']) {
      expect({ produced, ignoredBy: ignoredBy(ignorePatterns, produced) }).toEqual({ produced, ignoredBy: expect.any(String) });
    }
  });

  it('installs with `npm install` and builds an existing Nx target', () => {
    const runs = steps.filter((s) => s.keyword === 'RUN').map((s) => s.args);
    expect(runs.join('\n')).not.toMatch(/\bnpm ci\b/);
    expect(runs.some((r) => /\bnpm install\b(?!.*--omit=dev)/.test(r))).toBe(true);
    const target = runs.join('\n').match(/\bnx run ([\w-]+):build\b/);
    expect(target?.[1]).toBe(app);
    expect(projectJson(app)?.targets).toHaveProperty('build');
  });

  it('runs as the node user', () => {
    const users = finalStage.filter((s) => s.keyword === 'USER').map((s) => s.args);
    expect(users.at(-1)).toBe('node');
  });

  it('starts the built entry point', () => {
    const cmd = finalStage.filter((s) => s.keyword === 'CMD').at(-1);
    expect(cmd).toBeDefined();
    const argv: string[] = JSON.parse(cmd!.args);
    if (app === 'dashboard') {
      expect(argv.join(' ')).toMatch(/next start apps\/dashboard -p .*-H /);
      expect(finalStage.some((s) => s.keyword === 'EXPOSE' && s.args === '3001')).toBe(true);
      return;
    }
    // tsc keeps paths under rootDir, so the entry is <outDir>/<path of main.ts from rootDir>.js.
    const projectDir = path.join(repoRoot, 'apps', app);
    const { compilerOptions } = JSON.parse(readFileSync(path.join(projectDir, 'tsconfig.app.json'), 'utf8'));
    const main = path.join(projectDir, 'src/main.ts');
    expect(existsSync(main)).toBe(true);
    const entry = path.join(
      path.relative(repoRoot, path.resolve(projectDir, compilerOptions.outDir)),
      path.relative(path.resolve(projectDir, compilerOptions.rootDir), main).replace(/\.ts$/, '.js'),
    );
    expect(argv).toEqual(['node', entry]);
  });

  if (app === 'api') {
    it('checks /health, exposes 3000 and can run migrations', () => {
      const healthcheck = finalStage.find((s) => s.keyword === 'HEALTHCHECK');
      expect(healthcheck?.args).toMatch(/fetch\('http:\/\/127\.0\.0\.1:'.*'\/health'\)/);
      expect(finalStage.some((s) => s.keyword === 'EXPOSE' && s.args === '3000')).toBe(true);
      // `prisma migrate deploy` loads prisma.config.ts, which imports adapter-pg7.
      expect(read(file)).toMatch(/test -x node_modules\/\.bin\/prisma && test -f node_modules\/adapter-pg7/);
      expect(read('prisma.config.ts')).toContain("from 'adapter-pg7'");
      expect(finalStage.flatMap(contextSources)).toEqual(expect.arrayContaining(['prisma', 'prisma.config.ts']));
    });
  }
});
