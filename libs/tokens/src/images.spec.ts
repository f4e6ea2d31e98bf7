import fc from 'fast-check';
import { DEFAULT_IMAGE_TOKENS, estimateImageTokens, readImageSize } from './images';
import { resolveModel } from './model-catalog';

const u16be = (n: number) => [(n >> 8) & 0xff, n & 0xff];
const u16le = (n: number) => [n & 0xff, (n >> 8) & 0xff];
const u24le = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff];
const u32be = (n: number) => [(n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
const ascii = (text: string) => [...Buffer.from(text, 'latin1')];
const b64 = (...parts: Array<number[] | Buffer>) => Buffer.concat(parts.map((p) => Buffer.from(p))).toString('base64');

function pngHeader(width: number, height: number): string {
  return b64([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], u32be(13), ascii('IHDR'), u32be(width), u32be(height), [8, 6, 0, 0, 0], u32be(0));
}

function gifHeader(width: number, height: number): string {
  return b64(ascii('GIF89a'), u16le(width), u16le(height), [0xf7, 0, 0]);
}

function jpegSegment(marker: number, payload: number[] | Buffer): Buffer {
  return Buffer.from([0xff, marker, ...u16be(payload.length + 2), ...payload]);
}

function jpegHeader(width: number, height: number, sof = 0xc0, exifBytes = 0): string {
  const frame = [8, ...u16be(height), ...u16be(width), 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1];
  return b64(
    [0xff, 0xd8],
    jpegSegment(0xe0, [...ascii('JFIF'), 0, 1, 1, 0, 0, 1, 0, 1, 0, 0]),
    jpegSegment(0xe1, Buffer.alloc(exifBytes, 0x45)), // an EXIF block that spans several decode chunks
    [0xff, 0xff], // fill bytes before a marker are allowed
    jpegSegment(0xdb, Buffer.alloc(65, 1)),
    jpegSegment(sof, frame),
    jpegSegment(0xda, [1, 1, 0, 0, 0x3f, 0]),
  );
}

function riff(chunk: string, body: number[]): string {
  return b64(ascii('RIFF'), u32be(0), ascii('WEBP'), ascii(chunk), u32be(body.length), body, Buffer.alloc(16));
}

const webpLossy = (w: number, h: number) => riff('VP8 ', [0x50, 0x2a, 0x00, 0x9d, 0x01, 0x2a, ...u16le(w | 0x4000), ...u16le(h | 0x8000)]);
function webpLossless(w: number, h: number): string {
  const bits = (w - 1) | ((h - 1) << 14);
  return riff('VP8L', [0x2f, bits & 0xff, (bits >>> 8) & 0xff, (bits >>> 16) & 0xff, (bits >>> 24) & 0xff]);
}
const webpExtended = (w: number, h: number) => riff('VP8X', [0x10, 0, 0, 0, ...u24le(w - 1), ...u24le(h - 1)]);

describe('readImageSize', () => {
  it.each([
    ['PNG', pngHeader(640, 480), 640, 480],
    ['PNG, large', pngHeader(70_000, 3), 70_000, 3],
    ['GIF', gifHeader(320, 200), 320, 200],
    ['JPEG baseline', jpegHeader(1024, 768), 1024, 768],
    ['JPEG progressive after a 20 KB EXIF block', jpegHeader(4032, 3024, 0xc2, 20_000), 4032, 3024],
    ['WebP lossy', webpLossy(800, 600), 800, 600],
    ['WebP lossless', webpLossless(1234, 16_383), 1234, 16_383],
    ['WebP extended', webpExtended(5000, 1), 5000, 1],
  ])('reads %s', (_format, data, width, height) => {
    expect(readImageSize(data)).toEqual({ width, height });
  });

  it('accepts a data URL and line-wrapped base64', () => {
    expect(readImageSize(`data:image/png;base64,${pngHeader(3, 2)}`)).toEqual({ width: 3, height: 2 });
    const wrapped = jpegHeader(100, 50, 0xc0, 3000).replace(/.{76}/g, '$&\r\n');
    expect(readImageSize(wrapped)).toEqual({ width: 100, height: 50 });
  });

  it('decodes only the header chunks, not the whole payload', () => {
    const big = pngHeader(10, 20) + 'A'.repeat(4_000_000);
    const from = jest.spyOn(Buffer, 'from');
    try {
      expect(readImageSize(big)).toEqual({ width: 10, height: 20 });
      const decoded = from.mock.calls.map(([value]) => (typeof value === 'string' ? value.length : 0));
      expect(Math.max(...decoded)).toBeLessThanOrEqual(4_096);
    } finally {
      from.mockRestore();
    }
  });

  it.each([
    ['empty', ''],
    ['not base64', 'this is not an image at all!!'],
    ['plain text', Buffer.from('Hello, world, this is text').toString('base64')],
    ['truncated PNG', pngHeader(640, 480).slice(0, 20)],
    ['PNG with a zero width', pngHeader(0, 480)],
    ['PNG without IHDR', b64([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], u32be(13), ascii('IDAT'), Buffer.alloc(16))],
    ['truncated GIF', b64(ascii('GIF89a'), [1])],
    ['JPEG with scan data before a frame header', b64([0xff, 0xd8, 0xff], jpegSegment(0xda, [1, 2, 3]).subarray(1))],
    ['JPEG with a broken segment', b64([0xff, 0xd8], jpegSegment(0xe0, [1, 2]), [0x12, 0x34, 0x56])],
    ['JPEG cut in its segments', jpegHeader(10, 10, 0xc0, 5000).slice(0, 400)],
    ['WebP with an unknown chunk', riff('ABCD', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])],
    ['WebP lossy without a start code', riff('VP8 ', [0, 0, 0, 1, 2, 3, 4, 5, 6, 7])],
  ])('returns undefined for %s', (_case, data) => {
    expect(readImageSize(data)).toBeUndefined();
  });

  it('never throws on arbitrary input, nor on garbage after a valid signature', () => {
    const signatures = [
      [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
      ascii('GIF87a'),
      [0xff, 0xd8, 0xff],
      [...ascii('RIFF'), 0, 0, 0, 0, ...ascii('WEBP')],
    ];
    fc.assert(
      fc.property(fc.string(), (value) => {
        readImageSize(value);
        return true;
      }),
    );
    fc.assert(
      fc.property(fc.constantFrom(...signatures), fc.uint8Array({ maxLength: 300 }), (signature, rest) => {
        const result = readImageSize(b64(signature, Buffer.from(rest)));
        return result === undefined || (result.width > 0 && result.height > 0);
      }),
    );
  });
});

describe('estimateImageTokens', () => {
  const gpt4o = resolveModel('gpt-4o').spec;
  const claude = resolveModel('claude-sonnet-4-5').spec;
  const gemini = resolveModel('gemini-2.5-pro').spec;
  const llama = resolveModel('llama3.1:8b').spec;

  it('uses OpenAI tiles: fit in 2048, shortest side 768, 85 + 170 per 512-px tile', () => {
    expect(estimateImageTokens(1024, 1024, gpt4o)).toBe(765);
    expect(estimateImageTokens(2048, 4096, gpt4o)).toBe(1105);
    expect(estimateImageTokens(100, 100, gpt4o)).toBe(255);
  });

  it('uses the Anthropic pixel formula, scaling the long edge to 1568 and capping at ~1600', () => {
    expect(estimateImageTokens(200, 200, claude)).toBe(54);
    expect(estimateImageTokens(1000, 1000, claude)).toBe(1334);
    expect(estimateImageTokens(1092, 1092, claude)).toBe(1590);
    expect(estimateImageTokens(4000, 3000, claude)).toBe(1600);
    expect(estimateImageTokens(1000, 1000, llama)).toBe(1334);
  });

  it('uses 258 per Gemini image, per 768-px tile when larger than 384 px', () => {
    expect(estimateImageTokens(300, 384, gemini)).toBe(258);
    expect(estimateImageTokens(1000, 1000, gemini)).toBe(1032);
  });

  describe("OpenAI, by model family as OpenAI's vision guide documents it", () => {
    const model = (id: string) => resolveModel(id).spec;

    it('tiles: detail low costs the base tokens, high (and auto, or none) the base plus each 512-px tile', () => {
      // [model, base, tile]; a 1024×1024 image is 4 tiles, 2048×4096 is 6 (768×1536 after scaling).
      const families: Array<[string, number, number]> = [
        ['gpt-4o', 85, 170],
        ['gpt-4.1', 85, 170],
        ['gpt-4.5-preview', 85, 170],
        ['gpt-5', 70, 140],
        ['gpt-5.5', 70, 140],
        ['gpt-5-chat-latest', 70, 140],
        ['gpt-4o-mini', 2_833, 5_667],
        ['o1', 75, 150],
        ['o3', 75, 150],
      ];
      for (const [id, base, tile] of families) {
        const spec = model(id);
        expect([id, estimateImageTokens(1024, 1024, spec, 'low')]).toEqual([id, base]);
        expect([id, estimateImageTokens(1024, 1024, spec, 'high')]).toEqual([id, base + 4 * tile]);
        expect([id, estimateImageTokens(1024, 1024, spec, 'auto')]).toEqual([id, base + 4 * tile]);
        expect([id, estimateImageTokens(2048, 4096, spec)]).toEqual([id, base + 6 * tile]);
        // Size unknown (a URL, a file id): the largest a high-detail image costs, 8 tiles; low needs no size.
        expect([id, estimateImageTokens(undefined, undefined, spec, 'high')]).toEqual([id, base + 8 * tile]);
        expect([id, estimateImageTokens(undefined, undefined, spec, 'low')]).toEqual([id, base]);
      }
      expect(estimateImageTokens(1024, 1024, model('gpt-4o'))).toBe(765);
    });

    it('patches: 32-px patches, scaled down to at most 1,536, times the model multiplier; detail does not change it', () => {
      // The guide's examples: 1024×1024 is 1,024 patches; 1800×2400 scales to 1056×1408, 33 × 44 = 1,452.
      const models: Array<[string, number]> = [
        ['gpt-4.1-mini', 1.62],
        ['gpt-4.1-nano', 2.46],
        ['gpt-5-mini', 1.62],
        ['gpt-5.4-mini', 1.62],
        ['gpt-5-nano', 2.46],
        ['o4-mini', 1.72],
      ];
      for (const [id, multiplier] of models) {
        const spec = model(id);
        expect([id, estimateImageTokens(1024, 1024, spec)]).toEqual([id, Math.ceil(1024 * multiplier)]);
        expect([id, estimateImageTokens(1024, 1024, spec, 'low')]).toEqual([id, Math.ceil(1024 * multiplier)]);
        expect([id, estimateImageTokens(1800, 2400, spec)]).toEqual([id, Math.ceil(1452 * multiplier)]);
        expect([id, estimateImageTokens(100, 50, spec)]).toEqual([id, Math.ceil(4 * 2 * multiplier)]);
        expect([id, estimateImageTokens(undefined, undefined, spec)]).toEqual([id, Math.ceil(1536 * multiplier)]);
      }
      expect(estimateImageTokens(1800, 2400, model('gpt-4.1-mini'))).toBe(2353);
    });

    it('patches never exceed 1,536 before the multiplier, whatever the aspect ratio', () => {
      const spec = model('gpt-4.1-mini');
      for (const [w, h] of [[20_000, 20], [4_000, 3_000], [1_537 * 32, 32], [33, 9_999], [1_000, 1_000]]) {
        const tokens = estimateImageTokens(w, h, spec);
        expect([w, h, tokens <= Math.ceil(1536 * 1.62), tokens > 0]).toEqual([w, h, true, true]);
      }
    });
  });

  it('falls back to the conservative default when dimensions are unknown or invalid (providers other than OpenAI)', () => {
    for (const spec of [claude, gemini, llama]) {
      expect(estimateImageTokens(undefined, 100, spec)).toBe(DEFAULT_IMAGE_TOKENS);
      expect(estimateImageTokens(0, 0, spec)).toBe(DEFAULT_IMAGE_TOKENS);
      expect(estimateImageTokens(Number.NaN, 10, spec)).toBe(DEFAULT_IMAGE_TOKENS);
    }
    expect(DEFAULT_IMAGE_TOKENS).toBe(1600);
  });
});
