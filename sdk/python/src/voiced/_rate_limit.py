# The rate-limit headers of the IETF httpapi ratelimit-headers draft, as structured-field lists:
# `RateLimit-Policy: "writes";q=600;w=3600, "read-burst";q=300;w=60` and
# `RateLimit: "read-burst";r=299;t=1`.
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class RateLimitPolicy:
    """One policy of `RateLimit-Policy`."""

    name: str
    """Policy name, e.g. `writes` or `read-burst`."""
    quota: int | None = None
    """Requests the policy allows per window (`q`)."""
    window: int | None = None
    """Window length in seconds (`w`)."""


@dataclass(frozen=True)
class RateLimitInfo:
    """The rate-limit state a response reported."""

    policy: str
    """The policy this request counted against (from `RateLimit`)."""
    remaining: int
    """Requests left in that policy (`r`)."""
    reset: int
    """Seconds until that policy's quota is full again (`t`)."""
    quota: int | None = None
    window: int | None = None
    policies: list[RateLimitPolicy] = field(default_factory=list)
    """Every policy of the credential (`RateLimit-Policy`)."""


def _parse_list(value: str) -> list[tuple[str, dict[str, str]]]:
    items: list[tuple[str, dict[str, str]]] = []
    i = 0
    n = len(value)

    def skip_space() -> None:
        nonlocal i
        while i < n and value[i] in " \t":
            i += 1

    def bare() -> str:
        nonlocal i
        start = i
        while i < n and value[i] not in ';,= \t':
            i += 1
        return value[start:i]

    def quoted() -> str:
        nonlocal i
        out = []
        i += 1
        while i < n and value[i] != '"':
            if value[i] == "\\":
                i += 1
            if i < n:
                out.append(value[i])
            i += 1
        i += 1
        return "".join(out)

    while i < n:
        skip_space()
        name = quoted() if i < n and value[i] == '"' else bare()
        params: dict[str, str] = {}
        skip_space()
        while i < n and value[i] == ";":
            i += 1
            skip_space()
            key = bare().lower()
            v = ""
            if i < n and value[i] == "=":
                i += 1
                v = quoted() if i < n and value[i] == '"' else bare()
            params[key] = v
            skip_space()
        if name:
            items.append((name, params))
        # Anything unexpected up to the next member is skipped rather than failing the call.
        while i < n and value[i] != ",":
            i += 1
        i += 1
    return items


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and re.fullmatch(r"-?\d+", v) else None


def parse_rate_limit(headers: Mapping[str, str]) -> RateLimitInfo | None:
    """Reads `RateLimit` and `RateLimit-Policy`; `None` when the answer carries no `RateLimit`
    (a 401, or a request made with an OAuth access token)."""
    current = _get(headers, "ratelimit")
    if not current:
        return None
    policies = [
        RateLimitPolicy(name, _int(p.get("q")), _int(p.get("w")))
        for name, p in _parse_list(_get(headers, "ratelimit-policy") or "")
    ]
    items = _parse_list(current)
    if not items:
        return None
    name, params = items[0]
    remaining, reset = _int(params.get("r")), _int(params.get("t"))
    if remaining is None or reset is None:
        return None
    policy = next((p for p in policies if p.name == name), None)
    return RateLimitInfo(
        policy=name,
        remaining=remaining,
        reset=reset,
        quota=policy.quota if policy else None,
        window=policy.window if policy else None,
        policies=policies,
    )


def _get(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is not None:
        return value
    for key, v in headers.items():
        if key.lower() == name:
            return v
    return None
