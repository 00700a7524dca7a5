# One exception class per stable error `code` (docs/api.md, "Errors"), all under VoicedError.
# API failures are parsed from problem documents (RFC 9457) and from the OpenAI envelope the
# OpenAI-dialect routes answer with; the client's own failures (network, timeout, a failed
# generation) have codes of their own.
from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from ._rate_limit import RateLimitInfo, parse_rate_limit

if TYPE_CHECKING:
    from .types import Generation

ApiErrorCode = Literal[
    "invalid_api_key",
    "pro_plan_required",
    "insufficient_scope",
    "feature_not_enabled",
    "invalid_signature",
    "invalid_request",
    "not_found",
    "method_not_allowed",
    "conflict",
    "generation_finished",
    "idempotency_key_in_use",
    "timestamps_unavailable",
    "payload_too_large",
    "request_timeout",
    "range_not_satisfiable",
    "unsupported_media_type",
    "idempotency_key_reused",
    "rate_limit_exceeded",
    "quota_exhausted",
    "key_ceiling_exceeded",
    "internal_error",
    "service_unavailable",
]
"""Error codes the API answers with."""

ClientErrorCode = Literal[
    "connection_error", "timeout", "generation_failed", "live_closed", "unknown_error"
]
"""Failures the SDK reports itself: the server could not be reached (`connection_error`), an
attempt or a wait ran out of time (`timeout`), a generation ended `failed` (`generation_failed`),
a live socket closed abnormally (`live_closed`), or the server answered with a code this SDK
version does not know (`unknown_error`; the body is in `error.body`)."""

ErrorCode = ApiErrorCode | ClientErrorCode


class VoicedError(Exception):
    """Every failure of a call. Branch on the subclass or on `code`."""

    code: ErrorCode = "unknown_error"

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode | None = None,
        status: int | None = None,
        detail: str | None = None,
        title: str | None = None,
        type: str | None = None,
        instance: str | None = None,
        param: str | None = None,
        required_scope: str | None = None,
        settings_url: str | None = None,
        retry_after: int | None = None,
        request_id: str | None = None,
        headers: Mapping[str, str] | None = None,
        rate_limit: RateLimitInfo | None = None,
        body: Any = None,
        generation: Generation | None = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.status = status
        """HTTP status; `None` when no answer came."""
        self.detail = detail
        """The human explanation (problem `detail`, or the envelope's `message`)."""
        self.title = title
        self.type = type
        """Problem `type` URL, the OpenAI envelope's error family, or ElevenLabs' status word
        (`detail.status` at a speech socket's upgrade, `error` in its messages)."""
        self.instance = instance
        self.param = param
        """The request field at fault (`invalid_request`), e.g. `seed`, `limit`, `audio`."""
        self.required_scope = required_scope
        """With `insufficient_scope`: the scope the credential lacks."""
        self.settings_url = settings_url
        """With plan, allowance and ceiling errors: where to resolve it."""
        self.retry_after = retry_after
        """Seconds the server asked to wait (`Retry-After`)."""
        self.request_id = request_id
        """`X-Request-Id` of the failed answer: quote it when reporting a problem."""
        self.headers = headers
        self.rate_limit = rate_limit
        self.body = body
        """The problem document (or envelope) as sent, parsed."""
        self.generation = generation
        """With `generation_failed` and a wait's `timeout`: the generation as last read."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


# Client-side failures.
class APIConnectionError(VoicedError):
    """The server could not be reached, or the connection broke before the answer was whole."""

    code: ErrorCode = "connection_error"


class APITimeoutError(VoicedError):
    """An attempt, or a wait for a generation, ran out of time."""

    code: ErrorCode = "timeout"


class GenerationFailed(VoicedError):
    """A waited-for generation ended `failed`; `detail` is its `error`, `generation` the generation."""

    code: ErrorCode = "generation_failed"


class LiveConnectionClosed(VoicedError):
    """A live socket was closed by the server with an error (idle timeout, longest session, …)."""

    code: ErrorCode = "live_closed"

    def __init__(self, message: str, *, close_code: int | None, reason: str, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.close_code = close_code
        self.reason = reason


class UnknownError(VoicedError):
    """An answer with a code this SDK version does not know."""

    code: ErrorCode = "unknown_error"


# API failures, one class per stable code.
class InvalidApiKey(VoicedError):
    code: ErrorCode = "invalid_api_key"


class PermissionDenied(VoicedError):
    """A 403: the plan, the scope, the feature or a link's signature refuses the call."""


class ProPlanRequired(PermissionDenied):
    code: ErrorCode = "pro_plan_required"


class InsufficientScope(PermissionDenied):
    code: ErrorCode = "insufficient_scope"


class FeatureNotEnabled(PermissionDenied):
    code: ErrorCode = "feature_not_enabled"


class InvalidSignature(PermissionDenied):
    code: ErrorCode = "invalid_signature"


class InvalidRequest(VoicedError):
    code: ErrorCode = "invalid_request"


class NotFound(VoicedError):
    code: ErrorCode = "not_found"


class MethodNotAllowed(VoicedError):
    code: ErrorCode = "method_not_allowed"


class Conflict(VoicedError):
    code: ErrorCode = "conflict"


class GenerationFinished(Conflict):
    code: ErrorCode = "generation_finished"


class IdempotencyKeyInUse(Conflict):
    code: ErrorCode = "idempotency_key_in_use"


class TimestampsUnavailable(Conflict):
    code: ErrorCode = "timestamps_unavailable"


class PayloadTooLarge(VoicedError):
    code: ErrorCode = "payload_too_large"


class RequestTimeout(VoicedError):
    code: ErrorCode = "request_timeout"


class RangeNotSatisfiable(VoicedError):
    code: ErrorCode = "range_not_satisfiable"


class UnsupportedMediaType(VoicedError):
    code: ErrorCode = "unsupported_media_type"


class IdempotencyKeyReused(VoicedError):
    code: ErrorCode = "idempotency_key_reused"


class TooManyRequests(VoicedError):
    """A 429: a rate, the monthly allowance or the key's ceiling."""


class RateLimitExceeded(TooManyRequests):
    """Over a rate policy or a concurrency cap; `retry_after` says when to come back."""

    code: ErrorCode = "rate_limit_exceeded"


class QuotaExhausted(TooManyRequests):
    """The account's monthly allowance is used up (`settings_url`: billing). Not retried."""

    code: ErrorCode = "quota_exhausted"


class KeyCeilingExceeded(TooManyRequests):
    """The key's monthly ceiling is reached (`settings_url`: the console). Not retried."""

    code: ErrorCode = "key_ceiling_exceeded"


class InternalError(VoicedError):
    code: ErrorCode = "internal_error"


class ServiceUnavailable(VoicedError):
    code: ErrorCode = "service_unavailable"


ERROR_CLASSES: dict[str, type[VoicedError]] = {
    cls.code: cls
    for cls in (
        InvalidApiKey,
        ProPlanRequired,
        InsufficientScope,
        FeatureNotEnabled,
        InvalidSignature,
        InvalidRequest,
        NotFound,
        MethodNotAllowed,
        Conflict,
        GenerationFinished,
        IdempotencyKeyInUse,
        TimestampsUnavailable,
        PayloadTooLarge,
        RequestTimeout,
        RangeNotSatisfiable,
        UnsupportedMediaType,
        IdempotencyKeyReused,
        RateLimitExceeded,
        QuotaExhausted,
        KeyCeilingExceeded,
        InternalError,
        ServiceUnavailable,
    )
}
"""The class of each API code."""

# The code a bare status stands for when the body names none (a proxy's error page).
_STATUS_CODES: dict[int, str] = {
    400: "invalid_request",
    401: "invalid_api_key",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "payload_too_large",
    415: "unsupported_media_type",
    416: "range_not_satisfiable",
    429: "rate_limit_exceeded",
    500: "internal_error",
    503: "service_unavailable",
}


def parse_retry_after(value: str | None) -> int | None:
    """`Retry-After` as seconds: delay-seconds, or an HTTP date counted from now."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0, int(when.timestamp() - time.time() + 0.999))


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def error_from_response(status: int, headers: Mapping[str, str], content: bytes) -> VoicedError:
    """The exception for a non-2xx answer, from its status, headers and body bytes."""
    text = content.decode("utf-8", errors="replace")
    body: Any
    try:
        body = json.loads(text) if text else None
    except ValueError:
        body = text
    fields: dict[str, str | None] = {}
    raw_code: str | None = None
    if isinstance(body, dict):
        envelope = body.get("error")
        eleven = body.get("detail")
        if isinstance(eleven, dict):
            # ElevenLabs' `{"detail": {"status", "message", "code", "param"}, "code"}` (the
            # speech sockets' upgrade and their REST twins).
            raw_code = _str(body.get("code")) or _str(eleven.get("code"))
            fields = {
                "detail": _str(eleven.get("message")),
                "type": _str(eleven.get("status")),
                "param": _str(eleven.get("param")),
            }
        elif isinstance(envelope, dict):
            # OpenAI's `{"error":{"message","type","param","code"}}` (the OpenAI-dialect routes).
            raw_code = _str(envelope.get("code"))
            fields = {
                "detail": _str(envelope.get("message")),
                "type": _str(envelope.get("type")),
                "param": _str(envelope.get("param")),
            }
        else:
            raw_code = _str(body.get("code"))
            fields = {
                "detail": _str(body.get("detail")),
                "title": _str(body.get("title")),
                "type": _str(body.get("type")),
                "instance": _str(body.get("instance")),
                "param": _str(body.get("param")),
                "required_scope": _str(body.get("required_scope")),
                "settings_url": _str(body.get("settings_url")),
            }
    code = raw_code if raw_code is not None else _STATUS_CODES.get(status)
    cls: type[VoicedError] = ERROR_CLASSES.get(code or "", UnknownError)
    detail = fields.get("detail") or fields.get("title")
    message = f"{status} {cls.code}" + (f": {detail}" if detail else "")
    return cls(
        message,
        status=status,
        retry_after=parse_retry_after(headers.get("retry-after")),
        request_id=headers.get("x-request-id"),
        headers=headers,
        rate_limit=parse_rate_limit(headers),
        body=body,
        detail=detail,
        title=fields.get("title"),
        type=fields.get("type"),
        instance=fields.get("instance"),
        param=fields.get("param"),
        required_scope=fields.get("required_scope"),
        settings_url=fields.get("settings_url"),
    )


def error_from_socket_message(message: Mapping[str, Any]) -> VoicedError:
    """The exception for a refusal a live socket sent before closing: the speech socket's
    `{"error", "message", "code", "param", "contextId"}` (`error` is ElevenLabs' status word,
    `code` voiced's stable code). `status` is `None`: no HTTP answer carried it."""
    code = _str(message.get("code"))
    cls: type[VoicedError] = ERROR_CLASSES.get(code or "", UnknownError)
    detail = _str(message.get("message"))
    context = _str(message.get("contextId"))
    text = cls.code + (f" (context {context})" if context else "")
    text += f": {detail}" if detail else ""
    return cls(
        text,
        detail=detail,
        type=_str(message.get("error")),
        param=_str(message.get("param")),
        body=dict(message),
    )
