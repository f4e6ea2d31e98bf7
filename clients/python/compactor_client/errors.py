"""The error a non-2xx answer of the Compactor API raises."""

from dataclasses import dataclass, field
from typing import Any, Dict, Optional


@dataclass(eq=False)
class CompactorApiError(Exception):
    """A non-2xx answer, with the API's error body ``{"error": {"code", "message", "details"}}``.

    ``code`` and ``message`` are the API's own (``validation_failed``, ``session_not_found``,
    ``rate_limited``, ...); ``details`` names the bad fields where the API says which. An answer
    without that JSON body (a proxy in front of the API, a 502) gets the code ``http_<status>``
    and its text as the message. ``body`` is what the API sent (parsed JSON, or its text).
    """

    status: int
    code: str
    message: str
    details: Optional[Dict[str, Any]] = None
    body: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"

    @classmethod
    def from_response(cls, status: int, text: str) -> "CompactorApiError":
        """The error for an answer's status and body text."""
        import json

        try:
            body: Any = json.loads(text) if text else None
        except ValueError:
            body = text
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and isinstance(error.get("code"), str) and isinstance(error.get("message"), str):
            details = error.get("details")
            return cls(status, error["code"], error["message"], details if isinstance(details, dict) else None, body)
        return cls(status, f"http_{status}", text[:500] if text else f"HTTP {status}", None, body)
