import { resolveModel } from '@compactor/tokens';
import { messageCounter } from '../engine/count';
import { CanonicalMessage } from './canonical';
import { countableParts } from './countable';
import { parseOpenAIMessages } from './openai';
import { parseResponsesInput } from './responses';

/** A base64 PNG of the given size: its header, then `padding` bytes (what makes a real image's data long). */
function png(width: number, height: number, padding = 30_000): string {
  const header = Buffer.alloc(33);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(header, 0);
  header.writeUInt32BE(13, 8);
  header.write('IHDR', 12, 'ascii');
  header.writeUInt32BE(width, 16);
  header.writeUInt32BE(height, 20);
  return Buffer.concat([header, Buffer.alloc(padding, 7)]).toString('base64');
}

function responses(input: unknown[]): CanonicalMessage[] {
  const parsed = parseResponsesInput(input, 'input');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

function chat(messages: unknown[]): CanonicalMessage[] {
  const parsed = parseOpenAIMessages(messages, 'messages');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value;
}

describe('countableParts: images', () => {
  const image = `data:image/png;base64,${png(1024, 1024)}`;

  it('counts a Responses input_image as an image with its size and detail, not as its JSON', () => {
    const [high] = responses([{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: image, detail: 'high' }] }]);
    expect(countableParts(high)).toEqual({ texts: ['What is this?'], images: [{ width: 1024, height: 1024, detail: 'high' }], opaqueJson: [] });
    const [low] = responses([{ type: 'message', role: 'user', content: [{ type: 'input_image', image_url: image, detail: 'low' }] }]);
    expect(countableParts(low).images).toEqual([{ width: 1024, height: 1024, detail: 'low' }]);
    // A file id or a web URL: the size is unknown.
    const [byFile] = responses([{ type: 'message', role: 'user', content: [{ type: 'input_image', file_id: 'file-abc', detail: 'auto' }, { type: 'input_image', image_url: 'https://example.com/a.png' }] }]);
    expect(countableParts(byFile).images).toEqual([{ detail: 'auto' }, {}]);
  });

  it('counts an image in a Responses tool output (function_call_output with content parts) as an image', () => {
    const [, , output] = responses([
      { type: 'message', role: 'user', content: 'Look at the screenshot.' },
      { type: 'function_call', call_id: 'c1', name: 'view_image', arguments: '{"path":"shot.png"}' },
      { type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_image', image_url: image, detail: 'high' }] },
    ]);
    expect(countableParts(output)).toEqual({ texts: [], images: [{ width: 1024, height: 1024, detail: 'high' }], opaqueJson: [] });
  });

  it("keeps a Chat Completions image_url part's detail, also when the part stays opaque", () => {
    const [modelled] = chat([{ role: 'user', content: [{ type: 'image_url', image_url: { url: image, detail: 'low' } }] }]);
    expect(countableParts(modelled).images).toEqual([{ width: 1024, height: 1024, detail: 'low' }]);
    const [kept] = chat([{ role: 'user', content: [{ type: 'image_url', image_url: { url: image, detail: 'high', extra: 1 } }] }]);
    expect(kept.blocks[0].type).toBe('opaque');
    expect(countableParts(kept)).toEqual({ texts: [], images: [{ width: 1024, height: 1024, detail: 'high' }], opaqueJson: [] });
  });

  it("a message's tokens: the image by its model's documented billing, a few hundred tokens where its JSON would count ~13,000", () => {
    const [message] = responses([{ type: 'message', role: 'user', content: [{ type: 'input_image', image_url: image, detail: 'high' }] }]);
    const gpt4o = resolveModel('gpt-4o').spec;
    const gpt5 = resolveModel('gpt-5.5').spec;
    const mini = resolveModel('gpt-4.1-mini').spec;
    expect(messageCounter(gpt4o).countMessage(message)).toBe(gpt4o.messageOverhead + 765);
    expect(messageCounter(gpt5).countMessage(message)).toBe(gpt5.messageOverhead + 70 + 4 * 140);
    expect(messageCounter(mini).countMessage(message)).toBe(mini.messageOverhead + Math.ceil(1024 * 1.62));
    const [low] = responses([{ type: 'message', role: 'user', content: [{ type: 'input_image', image_url: image, detail: 'low' }] }]);
    expect(messageCounter(gpt4o).countMessage(low)).toBe(gpt4o.messageOverhead + 85);
    expect(JSON.stringify(message.blocks[0]).length / 3).toBeGreaterThan(13_000);
  });
});
