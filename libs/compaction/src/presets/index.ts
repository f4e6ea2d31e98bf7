import { PresetDefinition } from '../engine/preset';
import { BALANCED } from './balanced';
import { CHECKPOINT_AGING } from './checkpoint-aging';
import { FACTOR3 } from './factor3';
import { OFFLOAD_COMPACT } from './offload-compact';
import { TWO_LAYER } from './two-layer';
import { WATERMARK } from './watermark';

/**
 * Every preset of SPEC.md's table, each one file of this folder (its defaults, trigger, stages
 * and ingest step) over libs/compaction/src/stages. The registry finds them here by name.
 */
// Parameters differ per preset; each run gets the params its own defaults resolved to.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const PRESET_DEFINITIONS: ReadonlyArray<PresetDefinition<any>> = [BALANCED, CHECKPOINT_AGING, FACTOR3, TWO_LAYER, WATERMARK, OFFLOAD_COMPACT];
