#!/usr/bin/env python3
"""Fails on any import in src/ that breaks the layering of docs/architecture.md (issue 24):

    domain, signing  <-  config, store, engines, audio, models, limits  <-  worker, telemetry
    <-  service (the core)  <-  http (stateless plumbing)  <-  the doors: api, console, oauth,
    mcp  <-  app, cli

A module may name only modules of its own rank or below; a door never names another door.
Every `crate::<module>` path counts: `use` trees (with braces), and paths written inline.
"""
import pathlib
import re
import sys

RANK = {
    "domain": 0, "signing": 0,
    "config": 1, "store": 1, "engines": 1, "audio": 1, "models": 1, "limits": 1,
    "worker": 2, "telemetry": 2,
    "service": 3,
    "http": 4,
    "api": 5, "console": 5, "oauth": 5, "mcp": 5,
    "app": 6, "cli": 6,
}
DOORS = {"api", "console", "oauth", "mcp"}


def top_module(path: pathlib.Path, src: pathlib.Path) -> str:
    rel = path.relative_to(src)
    name = rel.parts[0]
    return name[:-3] if name.endswith(".rs") else name


def named_modules(text: str):
    """Every top-level module a file names through `crate::`, with the line it is on."""
    # Drop comments (doc comments name modules in prose) and string literals.
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    for match in re.finditer(r"\bcrate\s*::\s*(\{)?", text):
        line = text.count("\n", 0, match.start()) + 1
        if match.group(1):
            # `crate::{a::b, c, d::{e, f}}`: the first path segment of each top-level item.
            depth, start, i = 1, match.end(), match.end()
            while depth and i < len(text):
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            body, level, item = text[start:i - 1], 0, ""
            items = []
            for ch in body:
                if ch == "{":
                    level += 1
                elif ch == "}":
                    level -= 1
                if ch == "," and level == 0:
                    items.append(item)
                    item = ""
                else:
                    item += ch
            items.append(item)
            for it in items:
                head = re.match(r"\s*([a-z_][a-z0-9_]*)", it)
                if head:
                    yield head.group(1), line
        else:
            head = re.match(r"([a-z_][a-z0-9_]*)", text[match.end():])
            if head:
                yield head.group(1), line


def main() -> int:
    src = pathlib.Path(__file__).resolve().parent.parent / "src"
    failures = []
    for path in sorted(src.rglob("*.rs")):
        module = top_module(path, src)
        if module in ("lib", "main"):
            continue
        if module not in RANK:
            failures.append(f"{path.relative_to(src.parent)}: module `{module}` has no layer in scripts/check-layers.py")
            continue
        for named, line in named_modules(path.read_text()):
            if named == module or named not in RANK:
                continue
            where = f"{path.relative_to(src.parent)}:{line}"
            if module in DOORS and named in DOORS:
                failures.append(f"{where}: the door `{module}` names the door `{named}`")
            elif RANK[named] > RANK[module]:
                failures.append(f"{where}: `{module}` (layer {RANK[module]}) names `{named}` (layer {RANK[named]}), which sits above it")
    for failure in failures:
        print(failure)
    if failures:
        print(f"{len(failures)} import(s) break the layering (docs/architecture.md)", file=sys.stderr)
        return 1
    print("layering: every import points down, no door names another")
    return 0


if __name__ == "__main__":
    sys.exit(main())
