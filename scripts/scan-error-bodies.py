#!/usr/bin/env python3
"""Checks every error body the test suites produced (debug builds append them to the file named
by VOICED_ERROR_BODY_LOG) for internal detail: filesystem paths, SQL state, panic messages.

Exits 1 naming the offending bodies, or when the file holds no bodies at all (the audit hook
would then be broken, and this check would prove nothing)."""
import json
import re
import sys

# A path rooted at / outside the API's own routes: "/root/…", "/usr/lib/…", "/tmp/x".
PATH = re.compile(r"(?<![\w:/.])/(?!v1/|errors/|console/|openapi\.json)[A-Za-z0-9._-]+/[A-Za-z0-9._/-]+")
FORBIDDEN = [re.compile(p, re.I) for p in (r"SQLSTATE", r"panicked", r"sqlx", r"error returned from database", r"\.rs:\d+", r"\.onnx", r"\.so\b")]


def texts(body):
    """The human-readable members: detail/message/title (type and instance are URLs/paths)."""
    if "error" in body and isinstance(body["error"], dict):
        yield body["error"].get("message") or ""
    for member in ("detail", "title"):
        if isinstance(body.get(member), str):
            yield body[member]


def main(path):
    bad, count = [], 0
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            line = line.strip()
            if not line:
                continue
            count += 1
            body = json.loads(line)
            for text in texts(body):
                if PATH.search(text) or any(p.search(text) for p in FORBIDDEN):
                    bad.append(line)
    if count == 0:
        print(f"scan-error-bodies: {path} holds no error bodies; the audit hook is not working")
        return 1
    if bad:
        print(f"scan-error-bodies: {len(bad)} of {count} error bodies carry internal detail:")
        for line in sorted(set(bad))[:50]:
            print("  " + line)
        return 1
    print(f"scan-error-bodies: {count} error bodies, none carries a path, SQL or a panic message")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
