"""A thin client for the Compactor REST API over the standard library (urllib, json).

httpx is the usual choice, but this client has no dependency at all, so it installs anywhere
Python 3 runs (including machines that reach no package index).
"""

import json
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Literal, Mapping, Optional, Union, cast
from urllib.error import HTTPError
from urllib.parse import quote, urlencode
from urllib.request import Request, urlopen

from .errors import CompactorApiError
from .types import (
    AppendMessagesResponse,
    CompactResponse,
    ContextResponse,
    JobView,
    RestoreResponse,
    SessionDetail,
    SessionPage,
    SessionView,
    SnapshotList,
    SnapshotView,
)

ContextFormat = Literal["anthropic", "openai", "responses", "canonical"]
#: A preset name (``"balanced"``) or a preset with parameter overrides.
Policy = Union[str, Mapping[str, Any]]

_FINISHED = ("succeeded", "skipped", "failed")


def _segment(value: str) -> str:
    """One path segment, escaped (session ids may hold any character)."""
    return quote(value, safe="")


@dataclass
class Compactor:
    """The Compactor API at ``base_url`` (``http://127.0.0.1:3000``) with one API key.

    Each method returns the response body (typed with the TypedDicts of ``compactor_client.types``,
    generated from the OpenAPI document) or raises ``CompactorApiError`` with the API's error body.
    ``request`` reaches every other route.
    """

    base_url: str
    api_key: str
    #: Seconds to wait for one answer.
    timeout: float = 30.0

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> Any:
        """Sends one request and returns its parsed JSON body (None when empty)."""
        url = self.base_url.rstrip("/") + path
        params = {k: v for k, v in (query or {}).items() if v is not None}
        if params:
            url += "?" + urlencode(params)
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = Request(url, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.api_key}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urlopen(request, timeout=self.timeout) as response:
                text = response.read().decode("utf-8")
        except HTTPError as error:
            raise CompactorApiError.from_response(error.code, error.read().decode("utf-8", "replace")) from None
        return json.loads(text) if text else None

    def append(
        self,
        session_id: str,
        messages: List[Dict[str, Any]],
        *,
        format: Optional[ContextFormat] = None,
        model: Optional[str] = None,
        context_window: Optional[int] = None,
        output_reserve: Optional[int] = None,
        policy: Optional[Policy] = None,
        system: Union[str, List[Dict[str, Any]], None] = None,
        max_tokens: Optional[int] = None,
        tools: Optional[List[Dict[str, Any]]] = None,
        idempotency_key: Optional[str] = None,
    ) -> AppendMessagesResponse:
        """Appends messages (Anthropic, OpenAI or canonical shape); the first append creates the session.

        ``model``, ``context_window``, ``output_reserve`` and ``policy`` set up a new session.
        Pass an ``idempotency_key`` and the same one when you retry the append: it applies once
        and the retry gets the first answer. Without one, a retry appends again.
        """
        body: Dict[str, Any] = {"messages": messages}
        for key, value in (
            ("format", format),
            ("model", model),
            ("contextWindow", context_window),
            ("outputReserve", output_reserve),
            ("policy", policy),
            ("system", system),
            ("maxTokens", max_tokens),
            ("tools", tools),
        ):
            if value is not None:
                body[key] = value
        headers = {} if idempotency_key is None else {"Idempotency-Key": idempotency_key}
        return cast(
            AppendMessagesResponse,
            self.request("POST", f"/v1/sessions/{_segment(session_id)}/messages", body=body, headers=headers),
        )

    def context(self, session_id: str, format: Optional[ContextFormat] = None, *, wait_ms: Optional[int] = None) -> ContextResponse:
        """The ready-to-send context in the provider's shape (default ``anthropic``).

        ``wait_ms``: when it would be served through the fallback while a compaction of the session is queued or
        running, wait at most this long for it.
        """
        query = {"format": format, "waitMs": wait_ms}
        return cast(ContextResponse, self.request("GET", f"/v1/sessions/{_segment(session_id)}/context", query=query))

    def compact(self, session_id: str, *, dry_run: bool = False, format: Optional[ContextFormat] = None) -> CompactResponse:
        """Queues a compaction now (the job); ``dry_run=True`` answers with the would-be context instead."""
        body: Dict[str, Any] = {"dryRun": dry_run}
        if format is not None:
            body["format"] = format
        return cast(CompactResponse, self.request("POST", f"/v1/sessions/{_segment(session_id)}/compact", body=body))

    def job(self, job_id: str) -> JobView:
        """A compaction job as it is now."""
        return cast(JobView, self.request("GET", f"/v1/jobs/{_segment(job_id)}"))

    def wait_for_job(self, job_id: str, *, timeout: float = 60.0, interval: float = 0.25) -> JobView:
        """Polls a job until it succeeded, was skipped or failed; raises TimeoutError after ``timeout`` seconds.

        A trigger folded into a job that had not started (``supersededBy``) is answered by that job:
        the wait goes on with it and returns it.
        """
        deadline = time.monotonic() + timeout
        seen = {job_id}
        while True:
            job = self.job(job_id)
            if job.get("supersededBy") and job["supersededBy"] not in seen:
                job_id = job["supersededBy"]
                seen.add(job_id)
                continue
            if job["status"] in _FINISHED:
                return job
            if time.monotonic() >= deadline:
                raise TimeoutError(f"compaction job {job_id} still {job['status']} after {timeout} s")
            time.sleep(interval)

    def undo(self, session_id: str, job_id: str) -> RestoreResponse:
        """Undoes a compaction: the context returns to the version before it (a new head version); later messages stay."""
        return cast(RestoreResponse, self.request("POST", f"/v1/sessions/{_segment(session_id)}/compactions/{_segment(job_id)}/undo"))

    def snapshot(self, session_id: str, label: Optional[str] = None) -> SnapshotView:
        """Takes a manual snapshot of the context version in force."""
        body = {} if label is None else {"label": label}
        return cast(SnapshotView, self.request("POST", f"/v1/sessions/{_segment(session_id)}/snapshots", body=body))

    def snapshots(self, session_id: str) -> SnapshotList:
        """The session's snapshots, newest first."""
        return cast(SnapshotList, self.request("GET", f"/v1/sessions/{_segment(session_id)}/snapshots"))

    def restore(self, session_id: str, snapshot_id: str) -> RestoreResponse:
        """Restores a snapshot's context version (a new head version); later messages stay."""
        return cast(
            RestoreResponse,
            self.request("POST", f"/v1/sessions/{_segment(session_id)}/snapshots/{_segment(snapshot_id)}/restore"),
        )

    def session(self, session_id: str) -> SessionDetail:
        """One session with its budget."""
        return cast(SessionDetail, self.request("GET", f"/v1/sessions/{_segment(session_id)}"))

    def sessions(
        self,
        *,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        search: Optional[str] = None,
        model: Optional[str] = None,
    ) -> SessionPage:
        """One page of the tenant's sessions; pass ``nextCursor`` as ``cursor`` for the next."""
        query = {"limit": limit, "cursor": cursor, "search": search, "model": model}
        return cast(SessionPage, self.request("GET", "/v1/sessions", query=query))

    def iter_sessions(self, *, search: Optional[str] = None, model: Optional[str] = None, page_size: int = 100) -> Iterator[SessionView]:
        """Every session of the tenant, page after page."""
        cursor: Optional[str] = None
        while True:
            page = self.sessions(limit=page_size, cursor=cursor, search=search, model=model)
            yield from page["sessions"]
            cursor = page.get("nextCursor")
            if not cursor:
                return
