import { ModelSpec } from './types';

/**
 * Tokens for an image whose dimensions are unknown (a URL, an unreadable header): the
 * Anthropic ceiling (~1,600 for a ~1.15 MP image), above OpenAI's largest high-detail
 * image (8 tiles: 1,445) and a 6-tile Gemini image (1,548).
 */
export const DEFAULT_IMAGE_TOKENS = 1_600;

const ANTHROPIC_MAX_EDGE = 1_568;
const ANTHROPIC_PIXELS_PER_TOKEN = 750;

function validDimension(value: number | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

/** Anthropic: scaled so the long edge is at most 1,568 px, then width × height / 750, at most ~1,600. */
function anthropicImageTokens(width: number, height: number): number {
  const scale = Math.min(1, ANTHROPIC_MAX_EDGE / Math.max(width, height));
  const tokens = Math.ceil((width * scale * (height * scale)) / ANTHROPIC_PIXELS_PER_TOKEN);
  return Math.min(tokens, DEFAULT_IMAGE_TOKENS);
}

/** An OpenAI image part's `detail` (Chat Completions `image_url.detail`, Responses `input_image.detail`). */
export type ImageDetail = 'low' | 'high' | 'auto';

/**
 * How an OpenAI model bills an image, as OpenAI's vision guide ("Calculating costs") documents it:
 * - tiles (GPT-4o, GPT-4.1, GPT-4.5, GPT-5, o1, o3): `detail: "low"` costs the base tokens; otherwise the image is fit
 *   in 2048×2048, its shortest side scaled down to 768, and each 512-px tile costs the tile tokens on top of the base;
 * - patches (GPT-5 mini and nano, GPT-4.1 mini and nano, o4-mini): the 32-px patches that cover the image, scaled down
 *   to at most 1,536 of them, times the model's multiplier; `detail` does not change it.
 * `detail: "auto"` (or none) lets the model choose: estimated as high, the larger.
 */
type OpenAIImageBilling = { kind: 'tiles'; base: number; tile: number } | { kind: 'patches'; multiplier: number };

const TILES_DEFAULT: OpenAIImageBilling = { kind: 'tiles', base: 85, tile: 170 };

export function openaiImageBilling(spec: ModelSpec): OpenAIImageBilling {
  const id = spec.id.toLowerCase();
  if (id.startsWith('o4-mini')) return { kind: 'patches', multiplier: 1.72 };
  if (spec.family === 'gpt-5' || spec.family === 'gpt-4.1') {
    // gpt-5-mini, gpt-5.4-mini, gpt-4.1-mini …; a mini or nano of a later GPT-5 release is billed as its family's.
    if (id.includes('-nano')) return { kind: 'patches', multiplier: 2.46 };
    if (id.includes('-mini')) return { kind: 'patches', multiplier: 1.62 };
  }
  if (id.startsWith('gpt-4o-mini')) return { kind: 'tiles', base: 2_833, tile: 5_667 };
  if (spec.family === 'gpt-5') return { kind: 'tiles', base: 70, tile: 140 };
  if (spec.family === 'o1' || spec.family === 'o3') return { kind: 'tiles', base: 75, tile: 150 };
  return TILES_DEFAULT;
}

const PATCH = 32;
const MAX_PATCHES = 1_536;
/** The most 512-px tiles a high-detail image can have (768 × 2048 after scaling). */
const MAX_TILES = 8;

function openaiTiles(width: number, height: number): number {
  const fit = Math.min(1, 2_048 / Math.max(width, height));
  let w = width * fit;
  let h = height * fit;
  const shortest = Math.min(1, 768 / Math.min(w, h));
  w *= shortest;
  h *= shortest;
  return Math.ceil(w / 512) * Math.ceil(h / 512);
}

/**
 * 32-px patches covering the image, scaled down (to whole patches on its tighter side) to at most 1,536. A side thinner
 * than one patch after scaling keeps one patch (the guide's formula would scale a 49,184×32 image to nothing).
 */
function openaiPatches(width: number, height: number): number {
  const raw = Math.ceil(width / PATCH) * Math.ceil(height / PATCH);
  if (raw <= MAX_PATCHES) return raw;
  let r = Math.sqrt((PATCH * PATCH * MAX_PATCHES) / (width * height));
  const whole = (side: number) => Math.max(1, Math.floor((side * r) / PATCH)) / ((side * r) / PATCH);
  r *= Math.min(whole(width), whole(height));
  return Math.max(1, Math.min(MAX_PATCHES, Math.ceil((width * r) / PATCH) * Math.ceil((height * r) / PATCH)));
}

function openaiImageTokens(width: number | undefined, height: number | undefined, spec: ModelSpec, detail: ImageDetail | undefined): number {
  const billing = openaiImageBilling(spec);
  const known = validDimension(width) && validDimension(height);
  if (billing.kind === 'patches') return Math.ceil((known ? openaiPatches(width, height) : MAX_PATCHES) * billing.multiplier);
  if (detail === 'low') return billing.base;
  // Unknown size (a URL, a file id, an unreadable header): the largest a high-detail image can cost.
  return billing.base + billing.tile * (known ? openaiTiles(width, height) : MAX_TILES);
}

/** Gemini: 258 tokens for an image up to 384×384, otherwise 258 per 768×768 tile. */
function geminiImageTokens(width: number, height: number): number {
  if (width <= 384 && height <= 384) return 258;
  return 258 * Math.ceil(width / 768) * Math.ceil(height / 768);
}

/**
 * Estimated tokens for one image, by the model's provider; the Anthropic formula serves Ollama and unknown models.
 * OpenAI models follow their family's documented billing and the part's `detail` (see openaiImageBilling); an OpenAI
 * image of unknown size counts as the largest its model bills. Other providers: unknown or invalid dimensions →
 * `DEFAULT_IMAGE_TOKENS`.
 */
export function estimateImageTokens(width: number | undefined, height: number | undefined, spec: ModelSpec, detail?: ImageDetail): number {
  if (spec.provider === 'openai') return openaiImageTokens(width, height, spec, detail);
  if (!validDimension(width) || !validDimension(height)) return DEFAULT_IMAGE_TOKENS;
  switch (spec.provider) {
    case 'gemini':
      return geminiImageTokens(width, height);
    case 'anthropic':
    case 'ollama':
    case 'unknown':
      return anthropicImageTokens(width, height);
  }
}

/* ------------------------------------------------------------------ header parsing */

/** 4 base64 chars hold 3 bytes: decode 3 KB at a time, only the chunks that are read. */
const CHUNK_CHARS = 4_096;
const CHUNK_BYTES = (CHUNK_CHARS / 4) * 3;
/** JPEG segments are walked by their lengths; give up past this offset. */
const JPEG_SCAN_LIMIT = 1 << 20;

class Base64Bytes {
  private readonly chunks = new Map<number, Buffer>();

  constructor(private readonly base64: string) {}

  /** The byte at `offset`, or -1 past the end. */
  at(offset: number): number {
    const index = Math.floor(offset / CHUNK_BYTES);
    let chunk = this.chunks.get(index);
    if (!chunk) {
      chunk = Buffer.from(this.base64.slice(index * CHUNK_CHARS, (index + 1) * CHUNK_CHARS), 'base64');
      this.chunks.set(index, chunk);
    }
    const byte = chunk[offset - index * CHUNK_BYTES];
    return byte === undefined ? -1 : byte;
  }

  ascii(offset: number, length: number): string {
    let text = '';
    for (let i = 0; i < length; i++) text += String.fromCharCode(Math.max(0, this.at(offset + i)));
    return text;
  }

  u16be(offset: number): number {
    return (this.at(offset) << 8) | this.at(offset + 1);
  }

  u16le(offset: number): number {
    return this.at(offset) | (this.at(offset + 1) << 8);
  }

  u24le(offset: number): number {
    return this.at(offset) | (this.at(offset + 1) << 8) | (this.at(offset + 2) << 16);
  }

  u32be(offset: number): number {
    return this.at(offset) * 0x1000000 + ((this.at(offset + 1) << 16) | (this.at(offset + 2) << 8) | this.at(offset + 3));
  }

  /** True when every byte of the range exists. */
  has(offset: number, length: number): boolean {
    return this.at(offset + length - 1) >= 0;
  }
}

type Size = { width: number; height: number };

function size(width: number, height: number): Size | undefined {
  return width > 0 && height > 0 ? { width, height } : undefined;
}

function png(bytes: Base64Bytes): Size | undefined {
  if (!bytes.has(0, 24) || bytes.ascii(12, 4) !== 'IHDR') return undefined;
  return size(bytes.u32be(16), bytes.u32be(20));
}

function gif(bytes: Base64Bytes): Size | undefined {
  if (!bytes.has(0, 10)) return undefined;
  return size(bytes.u16le(6), bytes.u16le(8));
}

const JPEG_SOF = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);

function jpeg(bytes: Base64Bytes): Size | undefined {
  let offset = 2;
  while (offset < JPEG_SCAN_LIMIT) {
    if (bytes.at(offset) !== 0xff) return undefined;
    let marker = bytes.at(offset + 1);
    while (marker === 0xff) marker = bytes.at(++offset + 1); // fill bytes
    if (marker < 0) return undefined;
    if (JPEG_SOF.has(marker)) {
      if (!bytes.has(offset, 9)) return undefined;
      return size(bytes.u16be(offset + 7), bytes.u16be(offset + 5));
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      offset += 2; // standalone markers
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return undefined; // end of image, or scan data before any frame header
    if (!bytes.has(offset, 4)) return undefined;
    const length = bytes.u16be(offset + 2);
    if (length < 2) return undefined;
    offset += 2 + length;
  }
  return undefined;
}

function webp(bytes: Base64Bytes): Size | undefined {
  if (!bytes.has(0, 30)) return undefined;
  switch (bytes.ascii(12, 4)) {
    case 'VP8 ':
      // Key frame start code, then 14-bit width and height.
      if (bytes.at(23) !== 0x9d || bytes.at(24) !== 0x01 || bytes.at(25) !== 0x2a) return undefined;
      return size(bytes.u16le(26) & 0x3fff, bytes.u16le(28) & 0x3fff);
    case 'VP8L': {
      if (bytes.at(20) !== 0x2f) return undefined;
      const b1 = bytes.at(21);
      const b2 = bytes.at(22);
      const b3 = bytes.at(23);
      const b4 = bytes.at(24);
      return size(1 + (((b2 & 0x3f) << 8) | b1), 1 + (((b4 & 0x0f) << 10) | (b3 << 2) | ((b2 & 0xc0) >> 6)));
    }
    case 'VP8X':
      return size(1 + bytes.u24le(24), 1 + bytes.u24le(27));
    default:
      return undefined;
  }
}

/**
 * Width and height from the header of a base64 PNG, GIF, JPEG or WebP image (a `data:` URL
 * is accepted too), decoding only the few KB it reads. Undefined when the format is unknown
 * or the header is cut or corrupt; never throws.
 */
export function readImageSize(base64Data: string): { width: number; height: number } | undefined {
  try {
    if (typeof base64Data !== 'string' || base64Data.length < 8) return undefined;
    let data = base64Data;
    if (data.startsWith('data:')) data = data.slice(data.indexOf(',') + 1);
    // Line-wrapped base64 would shift the chunk offsets.
    if (/\s/.test(data)) data = data.replace(/\s+/g, '');
    const bytes = new Base64Bytes(data);
    const signature = bytes.ascii(0, 12);
    if (signature.startsWith('\x89PNG\r\n\x1a\n')) return png(bytes);
    if (signature.startsWith('GIF87a') || signature.startsWith('GIF89a')) return gif(bytes);
    if (bytes.at(0) === 0xff && bytes.at(1) === 0xd8 && bytes.at(2) === 0xff) return jpeg(bytes);
    if (signature.startsWith('RIFF') && signature.slice(8, 12) === 'WEBP') return webp(bytes);
    return undefined;
  } catch {
    return undefined;
  }
}
