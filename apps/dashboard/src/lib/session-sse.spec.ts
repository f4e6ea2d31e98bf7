import { SseEventFieldFilter, sseRelayTransform } from './session-sse';

const frame = 'id: 7\nevent: compressed\ndata: {"id":"7","type":"compressed"}\n\n';

describe('SseEventFieldFilter', () => {
  it('drops the event field so the browser delivers every message to onmessage', () => {
    const filter = new SseEventFieldFilter();
    expect(filter.push('retry: 2000\n\n' + frame + ': heartbeat\n\n')).toBe('retry: 2000\n\nid: 7\ndata: {"id":"7","type":"compressed"}\n\n: heartbeat\n\n');
    expect(filter.flush()).toBe('');
  });

  it('handles lines split across chunks, CRLF and a CR split from its LF', () => {
    const filter = new SseEventFieldFilter();
    const chunks = ['id: 8\r', '\nev', 'ent: checkpoint-aged\r\ndata: {"a":', '1}\r\n\r\n'];
    const out = chunks.map((c) => filter.push(c)).join('') + filter.flush();
    expect(out).toBe('id: 8\r\ndata: {"a":1}\r\n\r\n');
  });

  it('keeps data that merely mentions the word event', () => {
    const filter = new SseEventFieldFilter();
    expect(filter.push('data: event: not a field\n\n')).toBe('data: event: not a field\n\n');
  });
});

describe('sseRelayTransform', () => {
  it('relays bytes, multi-byte characters split across chunks included', async () => {
    const bytes = new TextEncoder().encode('id: 9\nevent: compressed\ndata: {"line":"Summarized 8 → 1"}\n\n');
    const split = bytes.indexOf(0xe2) + 1; // inside the arrow
    const source = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, split));
        controller.enqueue(bytes.slice(split));
        controller.close();
      },
    });
    const text = await new Response(source.pipeThrough(sseRelayTransform())).text();
    expect(text).toBe('id: 9\ndata: {"line":"Summarized 8 → 1"}\n\n');
  });
});
