import { BALANCED } from './balanced';
import { CHECKPOINT_AGING } from './checkpoint-aging';
import { FACTOR3 } from './factor3';
import { OFFLOAD_COMPACT } from './offload-compact';
import { TWO_LAYER } from './two-layer';
import { WATERMARK } from './watermark';

/**
 * Every preset of SPEC.md's table, each one file of this folder (its name, defaults, trigger,
 * stages and ingest step) over libs/compaction/src/stages. This list is the only other place a
 * preset is named: the preset names (PRESET_NAMES, PresetName), their triggers and the registry
 * are all read from it, in this order (the order the API and the dashboard list them in).
 */
export const PRESET_DEFINITIONS = [BALANCED, FACTOR3, WATERMARK, TWO_LAYER, OFFLOAD_COMPACT, CHECKPOINT_AGING] as const;

/** A preset's name. */
export type PresetName = (typeof PRESET_DEFINITIONS)[number]['name'];
