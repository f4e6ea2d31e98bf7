import type { components } from '../api/schema';
import { formatTokens } from './session-format';

export type GoalView = components['schemas']['GoalView'];

const CHECKPOINT_STATUS = {
  completed: { emoji: '✅', label: 'Completed' },
  'in-progress': { emoji: '🔄', label: 'In progress' },
  pending: { emoji: '⏳', label: 'Pending' },
} as const;

export interface GoalPanelView {
  /** Nothing recorded at all: no goal, no markers, no constraints. */
  empty: boolean;
  goal: string | null;
  meta: string[];
  checkpoints: { text: string; emoji: string; status: string }[];
  decisions: { text: string; locked: boolean; emoji: string }[];
  constraints: string[];
  artifacts: { text: string; action: string | null; path: string | null }[];
  nextStep: string | null;
  /** "Goal block in the context: 212 tokens, frozen in version 3" */
  goalBlock: string | null;
}

/** Seed 004's goal panel: ✅ 🔄 ⏳ checkpoints, 🔒 locked decisions, constraints and the next step. */
export function goalPanel(goal: GoalView): GoalPanelView {
  const checkpoints = (goal.checkpoints ?? []).map((c) => ({ text: c.text, emoji: CHECKPOINT_STATUS[c.status].emoji, status: CHECKPOINT_STATUS[c.status].label }));
  const decisions = (goal.decisions ?? []).map((d) => ({ text: d.text, locked: d.locked, emoji: d.locked ? '🔒' : '🔓' }));
  const constraints = goal.constraints ?? [];
  const artifacts = (goal.artifacts ?? []).map((a) => ({ text: a.text, action: a.action ?? null, path: a.path ?? null }));
  const meta = [goal.priority ? `Priority: ${goal.priority}` : null, goal.status ? `Status: ${goal.status}` : null].filter((m): m is string => m !== null);
  const goalBlock = goal.goalBlock ? `Goal block in the context: ${formatTokens(goal.goalBlock.tokens)} tokens, frozen in version ${goal.goalBlock.version}` : null;
  return {
    empty: !goal.goal && checkpoints.length === 0 && decisions.length === 0 && constraints.length === 0 && artifacts.length === 0 && !goal.nextStep,
    goal: goal.goal ?? null,
    meta,
    checkpoints,
    decisions,
    constraints,
    artifacts,
    nextStep: goal.nextStep ?? null,
    goalBlock,
  };
}
