import { CanonicalMessage } from '../messages/canonical';
import { classifyAssistant } from '../ledger/rules';

/** The command an assistant message ran through its text ('' for none), kept with the message (every read asks again). */
const textCommands = new WeakMap<CanonicalMessage, string>();

/**
 * The command `m` runs through its text, if it acts through text: an assistant message without tool calls whose text ends
 * with a shell block that holds a command (classifyAssistant's `endsWithCommand`, the facts ledger's own rule). SWE-agent's
 * messages do (the discussion, then the one command to run); Aider's advice to the user, a command with prose after it,
 * does not.
 */
export function textCommandOf(m: CanonicalMessage): string | undefined {
  if (m.role !== 'assistant') return undefined;
  let command = textCommands.get(m);
  if (command === undefined) {
    command = '';
    if (!m.blocks.some((b) => b.type === 'tool_use')) {
      for (const b of m.blocks) {
        if (b.type !== 'text') continue;
        const commands: { fenced: string[]; inline: string[]; endsWithCommand?: boolean } = { fenced: [], inline: [] };
        classifyAssistant(b.text, commands);
        if (commands.endsWithCommand) command = commands.fenced[commands.fenced.length - 1] ?? command;
      }
    }
    textCommands.set(m, command);
  }
  return command === '' ? undefined : command;
}

/**
 * Whether the user message `m` is a command's output rather than the user's words: tagged `observation` by its client,
 * or the text that answers a command the message before it ran through text (an agent that acts through text, such as
 * SWE-agent, sends each observation as a user message: `ctf_web_i_got_id`, `pydicom-1458__gpt4` and
 * `swe-agent__test-repo-i1` in testdata/, where 35 of 40 user messages are such outputs; none of the Aider, Claude
 * Code or OpenHands traces has one). The facts ledger reads these as tool output already; protection does not keep
 * them as the user's text, and masking treats them as the tool outputs they are.
 */
export function isTextObservation(m: CanonicalMessage, previous: CanonicalMessage | undefined): boolean {
  if (m.role !== 'user' || !m.blocks.some((b) => b.type === 'text') || m.blocks.some((b) => b.type === 'tool_result')) return false;
  if (m.tags?.includes('observation')) return true;
  return previous !== undefined && textCommandOf(previous) !== undefined;
}
