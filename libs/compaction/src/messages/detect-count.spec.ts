import { parseAnthropicMessages } from './anthropic';
import { parseCanonicalMessages } from './canonical-parse';
import { countableParts } from './countable';
import { detectFormat } from './detect';
import { imageSize } from './image-size';
import { parseOpenAIMessages } from './openai';

describe('detectFormat', () => {
  it.each([
    ['canonical blocks', [{ role: 'user', blocks: [] }], 'canonical'],
    ['canonical tool message', [{ role: 'tool', blocks: [{ type: 'tool_result', toolUseId: 'a', content: '' }] }], 'canonical'],
    ['OpenAI tool role', [{ role: 'tool', tool_call_id: 'c', content: 'x' }], 'openai'],
    ['OpenAI system role', [{ role: 'system', content: 'x' }, { role: 'user', content: 'y' }], 'openai'],
    ['OpenAI developer role', [{ role: 'developer', content: 'x' }], 'openai'],
    ['OpenAI tool_calls', [{ role: 'assistant', content: null, tool_calls: [] }], 'openai'],
    ['OpenAI image_url part', [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'u' } }] }], 'openai'],
    ['OpenAI refusal part', [{ role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] }], 'openai'],
    ['SWE-agent tool_call_ids', [{ role: 'tool', content: 'x', tool_call_ids: ['c'] }], 'openai'],
    ['Anthropic tool_use', [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'b', input: {} }] }], 'anthropic'],
    ['Anthropic tool_result', [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a' }] }], 'anthropic'],
    ['Anthropic thinking', [{ role: 'assistant', content: [{ type: 'thinking', thinking: '', signature: '' }] }], 'anthropic'],
    ['Anthropic document', [{ role: 'user', content: [{ type: 'document', source: {} }] }], 'anthropic'],
    ['plain strings: read the same by both', [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }], 'anthropic'],
    ['text parts only', [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], 'anthropic'],
    ['not an array', { role: 'user' }, 'anthropic'],
    ['junk', [1, null, 'x', [], { role: 5 }], 'anthropic'],
  ])('%s → %s', (_name, input, expected) => {
    expect(detectFormat(input)).toBe(expected);
  });

  it('reads messages both providers read alike in the shape the session used so far', () => {
    const plain = [{ role: 'assistant', content: 'Two files.' }];
    expect(detectFormat(plain, 'openai')).toBe('openai');
    expect(detectFormat(plain, 'anthropic')).toBe('anthropic');
    expect(detectFormat(plain, 'canonical')).toBe('anthropic');
    expect(detectFormat([{ role: 'assistant', content: 'x', refusal: null }])).toBe('openai');
    // A message only one provider sends wins over the session's previous shape.
    expect(detectFormat([{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a' }] }], 'openai')).toBe('anthropic');
  });
});

describe('countableParts', () => {
  it('lists what the model reads: texts, images with size, opaque JSON', () => {
    const parsed = parseAnthropicMessages(
      [
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'think', signature: 'sig' },
            { type: 'redacted_thinking', data: 'opaque-data' },
            { type: 'text', text: 'hello' },
            { type: 'tool_use', id: 'toolu_1', name: 'read', input: { path: 'a' } },
            { type: 'server_tool_use', id: 'srv', name: 'web_search', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_1',
              content: [
                { type: 'text', text: 'file body' },
                { type: 'image', source: { type: 'url', url: 'https://x' } },
                { type: 'document', source: { type: 'text', data: 'd' } },
              ],
            },
          ],
        },
      ],
      'messages',
    );
    if (!parsed.ok) throw new Error('parse failed');
    expect(countableParts(parsed.value[0])).toEqual({
      texts: ['think', 'opaque-data', 'hello', 'read', '{"path":"a"}'],
      images: [],
      opaqueJson: ['{"type":"server_tool_use","id":"srv","name":"web_search","input":{}}'],
    });
    expect(countableParts(parsed.value[1])).toEqual({
      texts: ['file body'],
      images: [{}],
      opaqueJson: ['{"type":"document","source":{"type":"text","data":"d"}}'],
    });
  });

  it('counts OpenAI arguments as sent, and image sizes read from the header', () => {
    const png = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.from([0, 0, 3, 32, 0, 0, 2, 88])]).toString('base64');
    const parsed = parseOpenAIMessages(
      [
        { role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{ "a" : 1 }' } }] },
      ],
      'messages',
    );
    if (!parsed.ok) throw new Error('parse failed');
    expect(countableParts(parsed.value[0]).images).toEqual([{ width: 800, height: 600 }]);
    expect(countableParts(parsed.value[1]).texts).toEqual(['f', '{ "a" : 1 }']);
  });

  it('reads sizes of GIF, JPEG and WebP headers', () => {
    expect(imageSize(Buffer.from('GIF89a\x0a\x00\x14\x00', 'latin1'))).toEqual({ width: 10, height: 20 });
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0x2c, 0x01, 0x90, 0x03, 0, 0, 0]);
    expect(imageSize(jpeg)).toEqual({ width: 400, height: 300 });
    const webp = Buffer.alloc(30);
    webp.write('RIFF', 0, 'latin1');
    webp.write('WEBPVP8X', 8, 'latin1');
    webp.writeUIntLE(639, 24, 3);
    webp.writeUIntLE(479, 27, 3);
    expect(imageSize(webp)).toEqual({ width: 640, height: 480 });
    expect(imageSize(Buffer.from('not an image'))).toBeUndefined();
  });

  it('takes sizes given in canonical form', () => {
    const parsed = parseCanonicalMessages([{ role: 'user', blocks: [{ type: 'image', source: { kind: 'url', url: 'u' }, width: 10, height: 20 }] }], 'messages');
    if (!parsed.ok) throw new Error('parse failed');
    expect(countableParts(parsed.value[0]).images).toEqual([{ width: 10, height: 20 }]);
  });
});
