import { CanonicalMessage } from '../messages/canonical';
import type { LedgerEntry } from '../ledger/ledger';
import { rankedKeys } from '../ledger/placeholder';
import { taskStatement } from './goal-markers';

/** The share of the task section's allowance that the keys of a cut statement may take. */
export const TASK_KEYS_SHARE = 1 / 3;

/**
 * `taskStatement`, and when the statement is cut, the facts-ledger keys first seen in it that its kept head lacks
 * (URLs, identifiers, settings, paths; highest weight first) on one line after it, within the same allowance: the
 * head gives up to `TASK_KEYS_SHARE` of it. The ledger survives every stage (SPEC.md "Facts ledger"), and cutting
 * the request is one: SWE-agent's issue texts hold their code and links below the first lines (pydicom-1458__gpt4:
 * `FileMetaDataset`, `ds.BitsAllocated` and the DICOM table's URL were only in the cut part).
 */
export function taskStatementWithKeys(
  messages: readonly { seq: number; message: CanonicalMessage }[],
  maxTokens: number,
  countText: (t: string) => number,
  entries: readonly LedgerEntry[],
): { seq: number; text: string } | undefined {
  const whole = taskStatement(messages, maxTokens, countText);
  if (!whole?.cut) return whole;
  const head = taskStatement(messages, Math.floor(maxTokens * (1 - TASK_KEYS_SHARE)), countText);
  if (!head) return whole;
  const kept = head.text.toLowerCase();
  const rest = entries.filter((e) => e.firstSeq === head.seq && !kept.includes(e.key));
  // Ranked as a placeholder ranks them, the highest-weight ones that fit what the head left of the allowance (each
  // counted on its own, then the line checked whole).
  const keys: string[] = [];
  let used = countText(`${head.text}\n${TASK_KEYS_LABEL}`);
  for (const key of rankedKeys(rest)) {
    const tokens = countText(`${key}; `);
    if (used + tokens > maxTokens) continue;
    keys.push(key);
    used += tokens;
  }
  while (keys.length > 0 && countText(`${head.text}\n${TASK_KEYS_LABEL}${keys.join('; ')}`) > maxTokens) keys.pop();
  return keys.length > 0 ? { seq: head.seq, text: `${head.text}\n${TASK_KEYS_LABEL}${keys.join('; ')}` } : whole;
}

const TASK_KEYS_LABEL = 'Keys in the rest of it: ';
