#!/usr/bin/env python3
"""Fails on any import in src/ that breaks the layering of docs/architecture.md (issue 24):

    domain, signing  <-  config, fetch, store, engines, audio, models, limits  <-  worker, telemetry
    <-  service (the core)  <-  http (stateless plumbing)  <-  the doors: api, console, oauth,
    mcp  <-  app, cli

A module may name only modules of its own rank or below; a door never names another door.
Every `crate::<module>` path counts: `use` trees (with braces), and paths written inline.

The core is closed (issue 37): the doors, `http` and the admin CLI (`src/cli/admin*`) name
neither `store`, `engines` nor `worker` (they reach them only through the core's operations) and
never ask the core for its process handles (`process_handles`, the composition root's); `service`
never names axum (it speaks codes, not HTTP).

`--self-test` plants one violation of each rule in a copy of the tree and fails unless each is
reported (CI runs it).
"""
import pathlib
import re
import sys

RANK = {
    "domain": 0, "signing": 0,
    "config": 1, "fetch": 1, "store": 1, "engines": 1, "audio": 1, "models": 1, "limits": 1,
    "worker": 2, "telemetry": 2,
    "service": 3,
    "http": 4,
    "api": 5, "console": 5, "oauth": 5, "mcp": 5,
    "app": 6, "cli": 6,
}
DOORS = {"api", "console", "oauth", "mcp"}
# Below the core: only `service` (and the composition root, `app`) reaches them.
BEHIND_CORE = {"store", "engines", "worker"}


def closed_core_client(path: pathlib.Path, src: pathlib.Path) -> bool:
    """The doors, `http`, and the admin CLI: they reach the database, the engines, the workers'
    streams and the blob store only through the core."""
    rel = path.relative_to(src)
    if rel.parts[0] in DOORS or rel.parts[0] == "http":
        return True
    return rel.parts[0] == "cli" and (rel.parts[-1] == "admin.rs" or "admin" in rel.parts[1:-1])


def strip(text: str) -> str:
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


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


def check(src: pathlib.Path) -> list:
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
            elif named in BEHIND_CORE and closed_core_client(path, src):
                failures.append(f"{where}: `{path.relative_to(src)}` names `{named}`: doors, http and the admin CLI reach it only through the core's operations")
        text = strip(path.read_text())
        if closed_core_client(path, src):
            for match in re.finditer(r"\bprocess_handles\b", text):
                line = text.count("\n", 0, match.start()) + 1
                failures.append(f"{path.relative_to(src.parent)}:{line}: `{path.relative_to(src)}` asks the core for its process handles (the composition root's)")
        if module == "service":
            for match in re.finditer(r"\baxum\b", text):
                line = text.count("\n", 0, match.start()) + 1
                failures.append(f"{path.relative_to(src.parent)}:{line}: the core names axum (it speaks codes; the doors speak HTTP)")
    return failures


PLANTED = {
    "api/planted_store.rs": "use crate::store::accounts;\n",
    "console/planted_engines.rs": "fn f() { let _ = crate::engines::reference::MAX_BYTES; }\n",
    "http/planted_worker.rs": "use crate::{domain::Plan, worker::streams::Streams};\n",
    "cli/admin/planted.rs": "use crate::store;\n",
    "mcp/planted_handles.rs": "fn f(core: &Core) { let _ = core.process_handles(); }\n",
    "service/planted_axum.rs": "use axum::http::StatusCode;\n",
    "api/planted_door.rs": "use crate::console::ConsoleState;\n",
}


def self_test(src: pathlib.Path) -> int:
    """Plants each violation in a copy of `src` and checks that each alone is reported."""
    import shutil
    import tempfile
    if check(src):
        print("self-test: the tree itself fails; fix it first", file=sys.stderr)
        return 1
    missed = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / "src"
        shutil.copytree(src, copy)
        for rel, text in PLANTED.items():
            planted = copy / rel
            planted.write_text(text)
            found = [f for f in check(copy) if rel in f]
            planted.unlink()
            print(f"self-test: planted {rel}: {'reported' if found else 'MISSED'}")
            if not found:
                missed.append(rel)
    if missed:
        print(f"self-test: {len(missed)} planted violation(s) not reported", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    src = pathlib.Path(__file__).resolve().parent.parent / "src"
    if "--self-test" in sys.argv[1:]:
        return self_test(src)
    failures = check(src)
    for failure in failures:
        print(failure)
    if failures:
        print(f"{len(failures)} import(s) break the layering (docs/architecture.md)", file=sys.stderr)
        return 1
    print("layering: every import points down, no door names another, the core is closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
