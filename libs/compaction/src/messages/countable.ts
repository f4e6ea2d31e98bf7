import { Block, CanonicalMessage, OpaqueBlock } from './canonical';
import { imageSizeFromBase64 } from './image-size';
import { isRecord, safeJson } from './util';

type ImageDetail = 'low' | 'high' | 'auto';

export interface CountableParts {
  /** Everything the model reads as text. */
  texts: string[];
  /** Pixel size when known, and an OpenAI part's `detail`. */
  images: Array<{ width?: number; height?: number; detail?: ImageDetail }>;
  /** Opaque blocks as JSON, for a conservative estimate. */
  opaqueJson: string[];
}

const detailOf = (value: unknown): ImageDetail | undefined => (value === 'low' || value === 'high' || value === 'auto' ? value : undefined);

/** Pixel size of a `data:<type>;base64,` URL's image, read from its header (undefined for other URLs). */
function dataUrlSize(url: string): { width: number; height: number } | undefined {
  if (!url.startsWith('data:')) return undefined;
  const comma = url.indexOf(',');
  if (comma < 0 || !url.slice(0, comma).endsWith(';base64')) return undefined;
  return imageSizeFromBase64(url.slice(comma + 1));
}

/**
 * An image part kept opaque: a Responses `input_image` (`image_url` a data or web URL, or a `file_id`) or a Chat
 * Completions `image_url` part with fields the canonical image does not model. Counted as an image, not as its JSON
 * (a base64 image as JSON would count ~1 token per 3 characters of its data).
 */
function opaqueImage(block: OpaqueBlock): CountableParts['images'][number] | undefined {
  const raw = block.raw;
  if (!isRecord(raw)) return undefined;
  let url: unknown;
  let detail: unknown;
  if (raw.type === 'input_image') {
    url = raw.image_url;
    detail = raw.detail;
  } else if (raw.type === 'image_url' && isRecord(raw.image_url)) {
    url = raw.image_url.url;
    detail = raw.image_url.detail;
  } else return undefined;
  const size = typeof url === 'string' ? dataUrlSize(url) : undefined;
  const d = detailOf(detail);
  return { ...size, ...(d ? { detail: d } : {}) };
}

/**
 * What a message costs the model, split by how it is counted: texts (text, tool name and
 * arguments, tool result text, thinking, redacted thinking data), images (with their size when
 * known, and their OpenAI `detail`; image parts kept opaque too), and other opaque blocks as their JSON.
 */
export function countableParts(message: CanonicalMessage): CountableParts {
  const parts: CountableParts = { texts: [], images: [], opaqueJson: [] };
  const visit = (block: Block) => {
    switch (block.type) {
      case 'text':
        parts.texts.push(block.text);
        break;
      case 'image': {
        const detail = detailOf(block.extras?.detail);
        parts.images.push({
          ...(block.width !== undefined ? { width: block.width } : {}),
          ...(block.height !== undefined ? { height: block.height } : {}),
          ...(detail ? { detail } : {}),
        });
        break;
      }
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
      case 'opaque': {
        const image = opaqueImage(block);
        if (image) parts.images.push(image);
        else parts.opaqueJson.push(safeJson(block.raw));
        break;
      }
    }
  };
  message.blocks.forEach(visit);
  return parts;
}
