import { FieldProblem, ValidationFailed } from '../errors';
import { listProblem, numberProblem, stringProblem } from './ranges';

/**
 * Parameter layering (SPEC.md "Policies"): the preset's defaults, then environment variables,
 * then the session's overrides. Every layer is checked against the defaults' shape: an unknown
 * key or a value of the wrong type is a `ValidationFailed` naming the field
 * (`policy.overrides.protection.latestMessages`), never a silently ignored or half-applied value.
 * Values are also checked against their parameter's range (ranges.ts).
 */
type Plain = Record<string, unknown>;
const isPlain = (v: unknown): v is Plain => typeof v === 'object' && v !== null && !Array.isArray(v);

function mergeLayer(base: unknown, layer: unknown, path: string, param: string, problems: FieldProblem[]): unknown {
  if (isPlain(base)) {
    if (!isPlain(layer)) {
      problems.push({ field: path, message: 'must be an object' });
      return base;
    }
    const out: Plain = { ...base };
    for (const [key, value] of Object.entries(layer)) {
      const field = `${path}.${key}`;
      if (!(key in base)) {
        problems.push({ field, message: `unknown parameter (known: ${Object.keys(base).join(', ')})` });
        continue;
      }
      out[key] = mergeLayer(base[key], value, field, param ? `${param}.${key}` : key, problems);
    }
    return out;
  }
  if (Array.isArray(base)) {
    if (!Array.isArray(layer) || !layer.every((x) => typeof x === 'string')) {
      problems.push({ field: path, message: 'must be an array of strings' });
      return base;
    }
    const problem = listProblem(layer);
    if (problem) {
      problems.push({ field: path, message: problem });
      return base;
    }
    return [...layer];
  }
  if (typeof base === 'number') {
    if (typeof layer !== 'number' || !Number.isFinite(layer) || layer < 0) {
      problems.push({ field: path, message: 'must be a non-negative number' });
      return base;
    }
    const problem = numberProblem(param, layer);
    if (problem) {
      problems.push({ field: path, message: problem });
      return base;
    }
    return layer;
  }
  if (typeof base === 'boolean') {
    if (typeof layer !== 'boolean') {
      problems.push({ field: path, message: 'must be true or false' });
      return base;
    }
    return layer;
  }
  if (typeof base === 'string') {
    if (typeof layer !== 'string') {
      problems.push({ field: path, message: 'must be a string' });
      return base;
    }
    const problem = stringProblem(param, layer);
    if (problem) {
      problems.push({ field: path, message: problem });
      return base;
    }
    return layer;
  }
  // An optional parameter whose default is undefined takes any JSON value the preset checks itself.
  return layer;
}

export interface ParamLayer {
  /** Where the layer comes from, for error messages: `policy.overrides`, `COMPACTOR_COMPACT_*`. */
  source: string;
  values: Record<string, unknown>;
}

/** The preset's defaults with each layer applied in order; throws `ValidationFailed` listing every bad field. */
export function resolveParams<P extends object>(defaults: P, ...layers: ParamLayer[]): P {
  const problems: FieldProblem[] = [];
  let current: unknown = defaults;
  for (const layer of layers) current = mergeLayer(current, layer.values, layer.source, '', problems);
  if (problems.length > 0) throw new ValidationFailed(problems);
  return current as P;
}
