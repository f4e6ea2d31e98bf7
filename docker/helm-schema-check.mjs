// Validates Kubernetes objects against the API's JSON schemas (the OpenAPI definitions compiled by
// the kubernetes-models package), offline: kubectl's --dry-run=client still asks an API server.
// A separate ESM process because kubernetes-models ships ESM only, which Jest's CommonJS runtime
// cannot import. Reads a JSON array of objects on stdin; prints a JSON array with one entry per
// object: { kind, name, errors } (errors null when valid, or the validator's message).
// Like kubeconform without -strict, it checks types, required fields and formats, not unknown fields.
import { readFileSync } from 'node:fs';
import process from 'node:process';

const modules = {
  v1: () => import('kubernetes-models/v1'),
  'apps/v1': () => import('kubernetes-models/apps/v1'),
  'batch/v1': () => import('kubernetes-models/batch/v1'),
  'policy/v1': () => import('kubernetes-models/policy/v1'),
  'networking.k8s.io/v1': () => import('kubernetes-models/networking.k8s.io/v1'),
  'autoscaling/v2': () => import('kubernetes-models/autoscaling/v2'),
};

const objects = JSON.parse(readFileSync(0, 'utf8'));
const results = [];
for (const object of objects) {
  const load = modules[object.apiVersion];
  const Model = load ? (await load())[object.kind] : undefined;
  let errors;
  if (!Model) {
    errors = `no schema for ${object.apiVersion} ${object.kind}`;
  } else {
    try {
      new Model(object).validate();
      errors = null;
    } catch (error) {
      errors = error instanceof Error ? error.message : String(error);
    }
  }
  results.push({ kind: object.kind, name: object.metadata?.name, errors });
}
process.stdout.write(JSON.stringify(results));
