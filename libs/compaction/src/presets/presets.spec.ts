import { PRESET_NAMES, presetTrigger } from '../policy/presets';
import { needsIngestRun, presetDefinition } from '../engine/registry';
import { CanonicalMessage } from '../messages/canonical';
import { PRESET_DEFINITIONS } from '.';

describe('presets are data (issue #16): one file each, stages, parameters and trigger', () => {
  it('every preset name of the policy has exactly one definition, found by its name', () => {
    expect(PRESET_DEFINITIONS.map((p) => p.name).sort()).toEqual([...PRESET_NAMES].sort());
    for (const name of PRESET_NAMES) expect(presetDefinition(name)?.name).toBe(name);
    expect(new Set(PRESET_NAMES).size).toBe(PRESET_NAMES.length);
  });

  it('reads the names, their order and the triggers from the definitions: a new preset is its file plus its place in the list', () => {
    // The order the API's enums, /v1/status and the dashboard list them in (a change shows in the OpenAPI drift check).
    expect(PRESET_NAMES).toEqual(['balanced', 'factor3', 'watermark', 'two-layer', 'offload-compact', 'checkpoint-aging']);
    expect([...PRESET_NAMES]).toEqual(PRESET_DEFINITIONS.map((p) => p.name));
  });

  it("each definition's trigger is the one the scheduler uses", () => {
    for (const p of PRESET_DEFINITIONS) expect(presetTrigger({ preset: p.name, overrides: {} })).toEqual(p.trigger);
  });

  it('each definition runs an ordered, non-empty list of stages', () => {
    for (const p of PRESET_DEFINITIONS) {
      const stages = (p as unknown as { pipeline?: { stages: unknown[] } }).pipeline?.stages;
      expect(stages?.length).toBeGreaterThan(0);
      for (const s of stages ?? []) expect(typeof s).toBe('function');
    }
  });

  it('says which appends call for an ingest run: balanced above offloadAboveTokens, two-layer over singleResultThreshold chars', () => {
    const result = (chars: number): CanonicalMessage => ({ role: 'user', blocks: [{ type: 'tool_result', toolUseId: 't1', content: 'x'.repeat(chars), isError: false }] });
    const text: CanonicalMessage = { role: 'user', blocks: [{ type: 'text', text: 'x'.repeat(60_000) }] };
    expect(needsIngestRun({ preset: 'balanced', overrides: {} }, [result(10)], [8_001])).toBe(true);
    expect(needsIngestRun({ preset: 'balanced', overrides: {} }, [result(10)], [8_000])).toBe(false);
    expect(needsIngestRun({ preset: 'balanced', overrides: {} }, [text], [20_000])).toBe(false);
    expect(needsIngestRun({ preset: 'balanced', overrides: { offloadAboveTokens: 2_000 } }, [result(10)], [2_001])).toBe(true);
    expect(needsIngestRun({ preset: 'two-layer', overrides: {} }, [result(50_001)], [1])).toBe(true);
    expect(needsIngestRun({ preset: 'two-layer', overrides: {} }, [result(50_000)], [1])).toBe(false);
    expect(needsIngestRun({ preset: 'two-layer', overrides: { compressionEnabled: false } }, [result(50_001)], [1])).toBe(false);
    expect(needsIngestRun({ preset: 'factor3', overrides: {} }, [result(60_000)], [20_000])).toBe(false);
    // Overrides that no longer validate: no ingest run.
    expect(needsIngestRun({ preset: 'balanced', overrides: { offloadAboveTokens: 'many' } }, [result(10)], [20_000])).toBe(false);
  });
});
