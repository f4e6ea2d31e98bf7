import { CanonicalMessage } from '../messages/canonical';

/** A history message as the engine sees it: its seq, canonical form and stored token count. */
export interface SessionMessage {
  seq: number;
  message: CanonicalMessage;
  tokens: number;
}

/** Counts one message's tokens (the caller binds the session's model). Stages stay pure: counting is injected. */
export type CountMessage = (message: CanonicalMessage) => number;
