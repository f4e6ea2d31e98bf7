import { ValidationFailed } from '../errors';
import { presetDefinition, resolvePresetParams } from '../engine/registry';
import { PRESET_NAMES, PresetName } from './presets';
import { isPrivilegedParam, NUMBER_RANGES, numberProblem, privilegedOverrides } from './ranges';

/** Every leaf of a preset's defaults, as `[path, value]`. */
function leaves(value: unknown, prefix = ''): [string, unknown][] {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    return Object.entries(value).flatMap(([k, v]) => leaves(v, prefix ? `${prefix}.${k}` : k));
  }
  return [[prefix, value]];
}

const problemsOf = (preset: PresetName, overrides: Record<string, unknown>): string[] => {
  try {
    resolvePresetParams({ preset, overrides });
    return [];
  } catch (error) {
    if (!(error instanceof ValidationFailed)) throw error;
    return error.problems.map((p) => `${p.field}: ${p.message}`);
  }
};

describe('parameter ranges', () => {
  it.each(PRESET_NAMES)('%s: every number parameter has a range, and its default lies in it', (name) => {
    const preset = presetDefinition(name);
    expect(preset).toBeDefined();
    for (const [path, value] of leaves(preset!.defaults)) {
      if (typeof value !== 'number') continue;
      expect([path, NUMBER_RANGES[path] !== undefined]).toEqual([path, true]);
      expect([path, numberProblem(path, value)]).toEqual([path, undefined]);
    }
  });

  it('refuses values outside the range, naming the field and the range', () => {
    expect(problemsOf('two-layer', { chunkSize: 100 })).toEqual(['policy.overrides.chunkSize: must be 2000..10000000']);
    expect(problemsOf('balanced', { summarizeDownTo: 1.5, protection: { latestMessages: 2.5 } })).toEqual([
      'policy.overrides.summarizeDownTo: must be 0..1',
      'policy.overrides.protection.latestMessages: must be an integer',
    ]);
    expect(problemsOf('factor3', { postprocess: { databaseMaxRows: 0 } })).toEqual(['policy.overrides.postprocess.databaseMaxRows: must be 1..1000000']);
    expect(problemsOf('checkpoint-aging', { instructions: 'x'.repeat(20_001) })).toEqual(['policy.overrides.instructions: must be at most 20000 characters']);
    expect(problemsOf('factor3', { constraintPhrases: Array.from({ length: 101 }, (_, i) => `p${i}`) })).toEqual(['policy.overrides.constraintPhrases: must have at most 100 entries']);
    expect(problemsOf('factor3', { sessionLogName: 'x'.repeat(201) })).toEqual(['policy.overrides.sessionLogName: must be at most 200 characters']);
  });

  it('checks the scheduler keys on presets that do not run them, together with the others', () => {
    expect(problemsOf('balanced', { triggerFraction: 0.01, snapshotFraction: 2, maskKeepLatestTurns: -1 })).toEqual([
      'policy.overrides.triggerFraction: must be 0.05..1',
      'policy.overrides.snapshotFraction: must be 0..1',
      'policy.overrides.maskKeepLatestTurns: must be a non-negative number',
    ]);
    expect(problemsOf('balanced', { triggerFraction: 'high' })).toEqual(['policy.overrides.triggerFraction: must be a number']);
    expect(problemsOf('balanced', { triggerFraction: 0.9, snapshotFraction: 0 })).toEqual([]);
    expect(problemsOf('offload-compact', { triggerFraction: 0 })).toEqual(['policy.overrides.triggerFraction: must be 0.05..1']);
  });

  it('holds for the environment layer too', () => {
    expect(() => resolvePresetParams({ preset: 'offload-compact', overrides: {} }, { retryCount: 50 })).toThrow('environment.retryCount: must be 0..10');
  });

  it('names prompts and the summarizer model as privileged, at any depth', () => {
    for (const path of ['instructions', 'agingInstructions', 'chunkInstructions', 'model', 'x.mergeInstructions']) expect([path, isPrivilegedParam(path)]).toEqual([path, true]);
    for (const path of ['chunkSize', 'verbosity', 'sessionLogName', 'protection.latestMessages', 'modelName']) expect([path, isPrivilegedParam(path)]).toEqual([path, false]);
    expect(privilegedOverrides({ chunkSize: 5_000, instructions: 'Be brief', model: 'gpt-4o-mini', protection: { latestMessages: 3 } })).toEqual([
      'policy.overrides.instructions',
      'policy.overrides.model',
    ]);
    expect(privilegedOverrides({})).toEqual([]);
  });
});
