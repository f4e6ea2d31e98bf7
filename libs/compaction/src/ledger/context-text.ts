import { CanonicalMessage } from '../messages/canonical';
import { isRecord } from './rules';

function stringLeaves(value: unknown, out: string[], depth = 0): void {
  if (depth > 8) return;
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) value.forEach((v) => stringLeaves(v, out, depth + 1));
  else if (isRecord(value)) for (const k of Object.keys(value)) stringLeaves(value[k], out, depth + 1);
}

function jsonOf(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}

/**
 * Every text of a context as sent, one piece a line: text blocks, a tool call's name and JSON
 * input (and the input's strings unescaped, so a command with quotes still reads as typed), tool
 * results, thinking, opaque blocks as JSON. Checkpoint and goal messages are ordinary messages.
 */
export function contextTextOf(messages: CanonicalMessage[]): string {
  const parts: string[] = [];
  for (const m of messages) {
    for (const b of m.blocks) {
      switch (b.type) {
        case 'text':
          parts.push(b.text);
          break;
        case 'tool_use':
          parts.push(`${b.name} ${jsonOf(b.input)}`);
          stringLeaves(b.input, parts);
          break;
        case 'tool_result':
          if (typeof b.content === 'string') parts.push(b.content);
          else for (const p of b.content) parts.push(p.type === 'text' ? p.text : p.type === 'opaque' ? jsonOf(p.raw) : '');
          break;
        case 'thinking':
          parts.push(b.thinking);
          break;
        case 'opaque':
          parts.push(jsonOf(b.raw));
          break;
        default:
          break;
      }
    }
  }
  return parts.join('\n');
}
