import { CompactionEvent } from '../engine/types';
import { Checkpoint, checkpointMessage, contentId, Treatment } from '../engine/version';
import { Stage } from './stage';
import { CheckpointNotes, fitToTokens, GoalAwareCheckpointParams, summarizerFailed } from './goal-aware-checkpoint';
import { maxOf, minOf } from '../engine/extremes';

const fmt = (n: number) => n.toLocaleString('en-US');
const fill = (template: string, values: Record<string, string>) => template.replace(/\{\{(\w+)\}\}/g, (all, key: string) => values[key] ?? all);

/** Seed 004's "Compression Levels", by checkpoint level (0 = recent … 3 = ultra merged). */
export const CHECKPOINT_AGING_LEVELS = [
  { name: 'recent', rules: 'detailed summaries; key decisions preserved; code snippets included' },
  { name: 'old', rules: 'moderate summaries; main points only; code references only' },
  { name: 'ancient', rules: 'brief summaries; critical info only; no code details' },
  { name: 'ultra', rules: 'minimal summary; essential context only' },
] as const;
export const ULTRA_LEVEL = 3;

/** The token target of a level: recent, old, ancient, ultra (and beyond: ultra). */
export function levelTarget(params: Pick<GoalAwareCheckpointParams, 'recentTokens' | 'oldTokens' | 'ancientTokens' | 'ultraTokens'>, level: number): number {
  return [params.recentTokens, params.oldTokens, params.ancientTokens, params.ultraTokens][Math.min(Math.max(level, 0), ULTRA_LEVEL)];
}

/**
 * Seed 004's aging: on each new compaction every older checkpoint ages one level by token
 * target (recent → old → ancient → ultra), and all ultra checkpoints merge into one. Aging writes
 * new checkpoints (new id, `agedFromId`, level + 1); the old ones are never changed, so old
 * versions keep theirs. Treatments follow their checkpoint to its aged form.
 */
export const ageCheckpoints: Stage<GoalAwareCheckpointParams, CheckpointNotes> = async ({ prefix, params, run, notes }) => {
  const { input, steps } = run;
  const fresh = notes.fresh as Checkpoint;
  const older = [...input.prefix.checkpoints].sort((a, b) => a.fromSeq - b.fromSeq || a.toSeq - b.toSeq);
  const aged: Checkpoint[] = [];
  const agedEvents: CompactionEvent[] = [];
  const renamed = notes.renamed;

  const age = async (sources: Checkpoint[], level: number): Promise<Checkpoint> => {
    const levelTokens = levelTarget(params, level);
    const name = CHECKPOINT_AGING_LEVELS[Math.min(level, ULTRA_LEVEL)].name;
    const joined = sources.map((c) => c.text).join('\n\n');
    let text = joined;
    // Within the target already (one small checkpoint, or ultra ones that fit together): no LLM call.
    if (input.countText(joined) > levelTokens) {
      const r = await input.summarizer.summarize(
        {
          kind: 'merge',
          instructions: fill(params.agingInstructions, { level: name, target: fmt(levelTokens), rules: CHECKPOINT_AGING_LEVELS[Math.min(level, ULTRA_LEVEL)].rules }),
          messages: sources.map(checkpointMessage),
          targetTokens: levelTokens,
          goal: input.goal,
        },
        input.signal,
      );
      run.account(r);
      text = r.text;
    }
    text = fitToTokens(text, levelTokens, input.countText);
    const fromSeq = minOf(Infinity, sources.map((c) => c.fromSeq));
    const toSeq = maxOf(-Infinity, sources.map((c) => c.toSeq));
    const next: Checkpoint = {
      id: contentId('ckpt', fromSeq, toSeq, level, text),
      fromSeq,
      toSeq,
      level,
      text,
      tokens: input.countText(text),
      originalTokens: sources.reduce((n, c) => n + c.originalTokens, 0),
      agedFromId: sources[0].id,
    };
    const before = sources.reduce((n, c) => n + c.tokens, 0);
    for (const c of sources) renamed.set(c.id, next.id);
    agedEvents.push({
      type: 'checkpoint-aged',
      line:
        sources.length > 1
          ? `Merged ${sources.length} ultra checkpoints (messages ${fromSeq}–${toSeq}) → 1 of ${fmt(next.tokens)} tokens (was ${fmt(before)})`
          : `Aged checkpoint ${fromSeq}–${toSeq} ${CHECKPOINT_AGING_LEVELS[Math.min(sources[0].level, ULTRA_LEVEL)].name} → ${name}: ${fmt(before)} → ${fmt(next.tokens)} tokens`,
    });
    return next;
  };

  try {
    if (older.length > 0) steps.push('age');
    const ultra: Checkpoint[] = [];
    for (const c of older) {
      if (c.level + 1 >= ULTRA_LEVEL) ultra.push(c);
      else aged.push(await age([c], c.level + 1));
    }
    // A lone checkpoint already at the ultra level and within its size cannot age further: it stays as it is.
    if (ultra.length === 1 && ultra[0].level >= ULTRA_LEVEL && input.countText(ultra[0].text) <= params.ultraTokens) aged.unshift(ultra[0]);
    // Levels never go down: a checkpoint from another preset may already be past ultra.
    else if (ultra.length > 0) aged.unshift(await age(ultra, maxOf(ULTRA_LEVEL, ultra.map((c) => c.level))));
  } catch (error) {
    return summarizerFailed(error, run);
  }

  // Earlier treatments follow their checkpoint to its aged form.
  const treatments: Record<number, Treatment> = {};
  for (const [seq, t] of Object.entries(prefix.treatments)) {
    treatments[Number(seq)] = t.kind === 'summarized' && renamed.has(t.checkpointId) ? { kind: 'summarized', checkpointId: renamed.get(t.checkpointId) as string } : t;
  }
  const checkpoints = [...aged, fresh].sort((a, b) => a.fromSeq - b.fromSeq || a.toSeq - b.toSeq);
  return { prefix: { ...prefix, checkpoints, treatments }, onSuccess: agedEvents };
};
