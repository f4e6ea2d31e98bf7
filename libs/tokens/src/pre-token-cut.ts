/**
 * Cuts a big text into pieces whose token counts add up to the whole text's count, so the pieces can
 * be counted apart (on several threads, and without copying the whole text to one of them).
 *
 * A cut goes right after a line feed that is followed by a printable ASCII character other than `/`.
 * No pre-token of o200k_base or cl100k_base spans such a place: the patterns' letter and number
 * alternatives never hold a line feed, the punctuation one lets only `\r`, `\n` (and, in o200k, `/`)
 * follow its line feeds, and the whitespace ones end at the last whitespace character. So the
 * pre-tokens of the pieces are the whole text's, and the byte-pair count is their sum. A text
 * without such places (one long line, base64) stays one piece.
 */
export function cutAtPreTokenBoundaries(text: string, pieceChars: number): string[] {
  const pieces: string[] = [];
  let start = 0;
  while (text.length - start > pieceChars) {
    let cut = -1;
    for (let lf = text.indexOf('\n', start + pieceChars - 1); lf >= 0 && lf + 1 < text.length; lf = text.indexOf('\n', lf + 1)) {
      const next = text.charCodeAt(lf + 1);
      if (next > 0x20 && next < 0x7f && next !== 0x2f) {
        cut = lf + 1;
        break;
      }
    }
    if (cut < 0) break;
    pieces.push(text.slice(start, cut));
    start = cut;
  }
  pieces.push(start === 0 ? text : text.slice(start));
  return pieces;
}
