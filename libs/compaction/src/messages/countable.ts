import { Block, CanonicalMessage } from './canonical';
import { safeJson } from './util';

export interface CountableParts {
  /** Everything the model reads as text. */
  texts: string[];
  images: Array<{ width?: number; height?: number }>;
  /** Opaque blocks as JSON, for a conservative estimate. */
  opaqueJson: string[];
}

/**
 * What a message costs the model, split by how it is counted: texts (text, tool name and
 * arguments, tool result text, thinking, redacted thinking data), images (with their size when
 * known), and opaque blocks as their JSON.
 */
export function countableParts(message: CanonicalMessage): CountableParts {
  const parts: CountableParts = { texts: [], images: [], opaqueJson: [] };
  const visit = (block: Block) => {
    switch (block.type) {
      case 'text':
        parts.texts.push(block.text);
        break;
      case 'image':
        parts.images.push({
          ...(block.width !== undefined ? { width: block.width } : {}),
          ...(block.height !== undefined ? { height: block.height } : {}),
        });
        break;
      case 'tool_use':
        parts.texts.push(block.name, block.argumentsText ?? (typeof block.input === 'string' ? block.input : safeJson(block.input ?? {})));
        break;
      case 'tool_result':
        if (typeof block.content === 'string') parts.texts.push(block.content);
        else block.content.forEach(visit);
        break;
      case 'thinking':
        parts.texts.push(block.thinking);
        break;
      case 'redacted_thinking':
        parts.texts.push(block.data);
        break;
      case 'opaque':
        parts.opaqueJson.push(safeJson(block.raw));
        break;
    }
  };
  message.blocks.forEach(visit);
  return parts;
}
