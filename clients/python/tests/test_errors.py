"""CompactorApiError from an answer's status and body (no API needed)."""

import unittest

from compactor_client import CompactorApiError


class ErrorBodyTest(unittest.TestCase):
    def test_the_api_error_body(self) -> None:
        text = '{"error":{"code":"validation_failed","message":"messages[0].role: bad","details":{"field":"messages[0].role"}}}'
        error = CompactorApiError.from_response(400, text)
        self.assertEqual((error.status, error.code, error.message), (400, "validation_failed", "messages[0].role: bad"))
        self.assertEqual(error.details, {"field": "messages[0].role"})
        self.assertEqual(error.body["error"]["code"], "validation_failed")
        self.assertEqual(str(error), "400 validation_failed: messages[0].role: bad")

    def test_an_answer_without_the_api_body(self) -> None:
        error = CompactorApiError.from_response(502, "<html>Bad Gateway</html>")
        self.assertEqual((error.code, error.message, error.details, error.body), ("http_502", "<html>Bad Gateway</html>", None, "<html>Bad Gateway</html>"))
        self.assertEqual(CompactorApiError.from_response(503, "").message, "HTTP 503")
        self.assertEqual(CompactorApiError.from_response(500, '{"error":"boom"}').code, "http_500")

    def test_it_is_an_exception(self) -> None:
        with self.assertRaises(CompactorApiError) as raised:
            raise CompactorApiError.from_response(404, '{"error":{"code":"session_not_found","message":"Session x not found"}}')
        self.assertEqual(raised.exception.code, "session_not_found")


if __name__ == "__main__":
    unittest.main()
