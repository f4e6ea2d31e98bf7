"""append → context → compact → undo, against the API at $COMPACTOR_URL with $COMPACTOR_API_KEY.

    python3 examples/append_context_compact_undo.py SESSION_ID
"""

import json
import os
import sys

from compactor_client import Compactor, CompactorApiError


def log_file(name: str) -> str:
    """A long tool output, as an agent's `cat` of a log file returns it."""
    return "\n".join(f"{name} {i:04d} INFO request served in {(i * 37) % 250} ms" for i in range(150))


def example(base_url: str, api_key: str, session_id: str) -> dict:
    compactor = Compactor(base_url, api_key)

    # 1. Append an agent's turns (OpenAI shape here); the first append creates the session.
    messages = [{"role": "user", "content": "Why are the API replicas slow?"}]
    for replica in ["api-1", "api-2", "api-3", "api-4"]:
        call = {"id": f"call_{replica}", "type": "function", "function": {"name": "read_log", "arguments": json.dumps({"replica": replica})}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": log_file(replica)})
    messages.append({"role": "assistant", "content": "api-3 serves its requests slowest."})
    appended = compactor.append(
        session_id,
        messages,
        format="openai",
        # A new session's settings: its model and window, and the balanced preset masking tool outputs older than 2 turns.
        model="gpt-4o",
        context_window=16_000,
        output_reserve=2_000,
        policy={"preset": "balanced", "overrides": {"maskKeepLatestTurns": 2}},
        idempotency_key=f"{session_id}-turn-1",  # the same key on a retry: applied once
    )
    print(f"appended seq {appended['firstSeq']}..{appended['lastSeq']}; context {appended['usage']['contextTokens']} tokens")

    # 2. The ready-to-send context, in the shape of your provider.
    before = compactor.context(session_id, "openai")
    print(f"context: {len(before['messages'])} messages, {before['tokens']} tokens")

    # 3. Compact now and wait for the worker's run.
    job = compactor.compact(session_id)["job"]
    compacted = compactor.wait_for_job(job["id"])
    after = compactor.context(session_id, "openai")
    print(f"compaction {compacted['status']}: {compacted['tokensBefore']} → {compacted['tokensAfter']} tokens (version {after['contextVersion']})")

    # 4. Undo it: the context returns to the version before the compaction; the history never changed.
    undone = compactor.undo(session_id, job["id"])
    restored = compactor.context(session_id, "openai")
    print(f"undone: version {undone['version']} restores version {undone['restoredVersion']}, {restored['tokens']} tokens")

    # Errors carry the API's error body.
    try:
        compactor.context("no-such-session")
    except CompactorApiError as error:
        print(f"{error.status} {error.code}: {error.message}")
    return {"appended": appended, "before": before, "compacted": compacted, "after": after, "undone": undone, "restored": restored}


if __name__ == "__main__":
    example(os.environ["COMPACTOR_URL"], os.environ["COMPACTOR_API_KEY"], sys.argv[1])
