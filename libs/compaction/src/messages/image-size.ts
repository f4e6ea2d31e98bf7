/**
 * Pixel size of a base64 image read from its header (PNG, GIF, JPEG, WebP), for token
 * estimates. Decodes at most a 96 KiB prefix; returns undefined when the size is not found.
 * Never throws.
 */
const MAX_BASE64_PREFIX = 128 * 1024; // 96 KiB of bytes

export function imageSizeFromBase64(data: string): { width: number; height: number } | undefined {
  try {
    const prefix = data.length > MAX_BASE64_PREFIX ? data.slice(0, MAX_BASE64_PREFIX) : data;
    return imageSize(Buffer.from(prefix, 'base64'));
  } catch {
    return undefined;
  }
}

function valid(width: number, height: number): { width: number; height: number } | undefined {
  return width > 0 && height > 0 ? { width, height } : undefined;
}

export function imageSize(b: Uint8Array): { width: number; height: number } | undefined {
  const u16be = (o: number) => (b[o] << 8) | b[o + 1];
  const u32be = (o: number) => ((b[o] << 24) | (b[o + 1] << 16) | (b[o + 2] << 8) | b[o + 3]) >>> 0;
  const u16le = (o: number) => b[o] | (b[o + 1] << 8);
  const u24le = (o: number) => b[o] | (b[o + 1] << 8) | (b[o + 2] << 16);
  const ascii = (o: number, s: string) => [...s].every((c, i) => b[o + i] === c.charCodeAt(0));

  // PNG: signature, then the IHDR chunk with width and height.
  if (b.length >= 24 && b[0] === 0x89 && ascii(1, 'PNG') && ascii(12, 'IHDR')) return valid(u32be(16), u32be(20));
  // GIF87a / GIF89a: logical screen size, little-endian.
  if (b.length >= 10 && ascii(0, 'GIF8')) return valid(u16le(6), u16le(8));
  // WebP: RIFF container with a VP8, VP8L or VP8X chunk.
  if (b.length >= 30 && ascii(0, 'RIFF') && ascii(8, 'WEBP')) {
    if (ascii(12, 'VP8 ')) return valid(u16le(26) & 0x3fff, u16le(28) & 0x3fff);
    if (ascii(12, 'VP8L') && b[20] === 0x2f) {
      const bits = (b[21] | (b[22] << 8) | (b[23] << 16) | (b[24] << 24)) >>> 0;
      return valid((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
    }
    if (ascii(12, 'VP8X')) return valid(u24le(24) + 1, u24le(27) + 1);
    return undefined;
  }
  // JPEG: walk the segments to the first start-of-frame marker.
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) {
    let o = 2;
    while (o + 9 < b.length) {
      if (b[o] !== 0xff) return undefined;
      const marker = b[o + 1];
      if (marker === 0xff) {
        o += 1;
        continue;
      }
      if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
        o += 2;
        continue;
      }
      const isFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
      if (isFrame) return valid(u16be(o + 7), u16be(o + 5));
      const length = u16be(o + 2);
      if (length < 2) return undefined;
      o += 2 + length;
    }
  }
  return undefined;
}
