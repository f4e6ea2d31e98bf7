"""The client against a running API: $COMPACTOR_URL with $COMPACTOR_API_KEY (an ingest key).

`npm test` runs it (clients/python/python-client.int-spec.ts) against the built API and worker.
"""

import os
import sys
import unittest
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

from append_context_compact_undo import example  # noqa: E402

from compactor_client import Compactor, CompactorApiError  # noqa: E402

URL = os.environ.get("COMPACTOR_URL")
KEY = os.environ.get("COMPACTOR_API_KEY", "")


@unittest.skipUnless(URL, "set COMPACTOR_URL and COMPACTOR_API_KEY to run against an API")
class AgainstTheApiTest(unittest.TestCase):
    def test_the_readme_example(self) -> None:
        session_id = f"client-py-{uuid.uuid4().hex[:8]}"
        result = example(URL, KEY, session_id)
        appended, before, compacted = result["appended"], result["before"], result["compacted"]
        after, undone, restored = result["after"], result["undone"], result["restored"]
        self.assertEqual((appended["sessionId"], appended["firstSeq"], appended["lastSeq"]), (session_id, 1, 10))
        self.assertFalse(appended["compaction"]["scheduled"])
        self.assertEqual(len(before["messages"]), 10)
        self.assertIsNone(before["contextVersion"])
        self.assertEqual((compacted["status"], compacted["trigger"]), ("succeeded", "manual"), compacted)
        self.assertLess(compacted["tokensAfter"], compacted["tokensBefore"])
        self.assertEqual(after["contextVersion"], compacted["resultVersion"])
        self.assertLess(after["tokens"], before["tokens"])
        self.assertEqual(undone["restoredVersion"], 0)
        self.assertGreater(undone["version"], compacted["resultVersion"])
        self.assertEqual(restored["contextVersion"], undone["version"])
        self.assertEqual(restored["messages"], before["messages"])

    def test_sessions_snapshots_restore_and_errors(self) -> None:
        compactor = Compactor(URL + "/", KEY)
        session_id = f"client-py-list:{uuid.uuid4().hex[:8]}"  # ":" is escaped in the path (%3A)
        compactor.append(session_id, [{"role": "user", "content": "hello"}], model="gpt-4o")
        page = compactor.sessions(search=session_id)
        self.assertEqual([s["id"] for s in page["sessions"]], [session_id])
        self.assertIn(session_id, [s["id"] for s in compactor.iter_sessions(page_size=1)])
        self.assertEqual(compactor.session(session_id)["id"], session_id)

        snapshot = compactor.snapshot(session_id, "before nothing")
        self.assertEqual((snapshot["kind"], snapshot["label"], snapshot["version"]), ("manual", "before nothing", 0))
        self.assertIn(snapshot["id"], [s["id"] for s in compactor.snapshots(session_id)["snapshots"]])
        restored = compactor.restore(session_id, snapshot["id"])
        self.assertEqual((restored["snapshotId"], restored["restoredVersion"]), (snapshot["id"], 0))

        # The same Idempotency-Key: applied once, the retry gets the first answer.
        once = compactor.append(session_id, [{"role": "assistant", "content": "hi"}], idempotency_key="retry-1")
        self.assertEqual(compactor.append(session_id, [{"role": "assistant", "content": "hi"}], idempotency_key="retry-1"), once)

        # wait_ms reaches the API: within range a context (nothing to wait for here), out of range a 400 naming waitMs.
        self.assertIsNone(compactor.context(session_id, "openai", wait_ms=1000)["fallback"])
        with self.assertRaises(CompactorApiError) as too_long:
            compactor.context(session_id, "openai", wait_ms=60001)
        self.assertEqual(too_long.exception.body["error"]["details"]["fields"][0]["field"], "waitMs")

        with self.assertRaises(CompactorApiError) as invalid:
            compactor.append(session_id, [{"role": "nobody", "content": "x"}])
        self.assertEqual((invalid.exception.status, invalid.exception.code), (400, "validation_failed"))
        self.assertEqual(invalid.exception.body["error"]["code"], "validation_failed")

        with self.assertRaises(CompactorApiError) as missing:
            compactor.undo(session_id, str(uuid.uuid4()))
        self.assertEqual(missing.exception.status, 404)

        with self.assertRaises(CompactorApiError) as unauthorized:
            Compactor(URL, "ck_wrong").sessions()
        self.assertEqual(unauthorized.exception.status, 401)


if __name__ == "__main__":
    unittest.main()
