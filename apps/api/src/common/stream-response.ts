import type { Response } from 'express';

/**
 * Sends a body made of text chunks as a chunked 200, writing each as the client takes it
 * (backpressure: the next chunk is produced only once the socket drained), so memory holds about
 * one chunk however long the body. The first chunk is produced before the status is sent: a
 * failure there is thrown to the caller (mapped to its HTTP answer as usual). A failure later, once
 * bytes are out, destroys the connection, so the client sees a cut-off response (no terminating
 * chunk) rather than a 200 that looks complete. A client that goes away stops the production.
 */
export async function streamChunks(res: Response, chunks: AsyncGenerator<string>, contentType: string, onError: (error: unknown) => void): Promise<void> {
  let next = await chunks.next();
  res.status(200);
  res.setHeader('Content-Type', contentType);
  try {
    while (!next.done) {
      if (res.destroyed) {
        await chunks.return(undefined);
        return;
      }
      if (!res.write(next.value)) await drainedOrClosed(res);
      next = await chunks.next();
    }
    res.end();
  } catch (error) {
    onError(error);
    res.destroy(error instanceof Error ? error : new Error(String(error)));
  }
}

/** Resolves when the response can take more, or is gone; its listeners are removed either way. */
function drainedOrClosed(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
