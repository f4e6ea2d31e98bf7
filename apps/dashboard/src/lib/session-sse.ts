/**
 * The API names each SSE message after the event type (`event: compressed`), and a browser's
 * EventSource delivers a named message only to a listener for that exact name. The dashboard
 * relays the stream with the `event:` field left out, so every message (types added later too)
 * reaches `onmessage`; the type is in the JSON data anyway. Everything else (ids, data,
 * comments, `retry`) passes through unchanged and unbuffered beyond the current line.
 */
export class SseEventFieldFilter {
  private pending = '';

  /** Feeds a chunk of the stream; returns what can be sent on now (whole lines only). */
  push(chunk: string): string {
    const text = this.pending + chunk;
    const lastBreak = Math.max(text.lastIndexOf('\n'), text.lastIndexOf('\r'));
    if (lastBreak < 0) {
      this.pending = text;
      return '';
    }
    // A "\r" at the very end may be the first half of "\r\n": keep it for the next chunk.
    const cut = text[lastBreak] === '\r' && lastBreak === text.length - 1 ? lastBreak : lastBreak + 1;
    this.pending = text.slice(cut);
    return filterLines(text.slice(0, cut));
  }

  /** The rest at the end of the stream. */
  flush(): string {
    const rest = this.pending;
    this.pending = '';
    return filterLines(rest);
  }
}

function filterLines(text: string): string {
  if (text === '') return '';
  return text
    .split(/(?<=\r\n|\n|\r(?!\n))/)
    .filter((line) => !/^event(:|\r|\n|$)/.test(line))
    .join('');
}

/** The filter as a byte stream transform, for a route handler's response body. */
export function sseRelayTransform(): TransformStream<Uint8Array, Uint8Array> {
  const filter = new SseEventFieldFilter();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  return new TransformStream({
    transform(chunk, controller) {
      const out = filter.push(decoder.decode(chunk, { stream: true }));
      if (out) controller.enqueue(encoder.encode(out));
    },
    flush(controller) {
      const out = filter.push(decoder.decode()) + filter.flush();
      if (out) controller.enqueue(encoder.encode(out));
    },
  });
}
