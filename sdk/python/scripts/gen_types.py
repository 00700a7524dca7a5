#!/usr/bin/env python3
"""Generates src/voiced/types.py from the API's OpenAPI document (openapi/openapi.json).

Every schema of `components.schemas` becomes a TypedDict (objects), a Literal (string enums) or a
type alias (unions). Members the schema does not require are `NotRequired`; members that may be
`null` are `X | None`. The SDK's resources build their request bodies as these TypedDicts and
declare their answers with them, so a field renamed or added on the server shows up as a diff of
this file (`--check`, run in CI by scripts/sdk-py-test.sh) and then as a type error under
`mypy --strict`.

    python scripts/gen_types.py            # rewrite src/voiced/types.py
    python scripts/gen_types.py --check    # exit 1 when the committed file differs
"""

from __future__ import annotations

import argparse
import json
import keyword
import sys
import textwrap
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DOCUMENT = HERE.parent.parent.parent / "openapi" / "openapi.json"
OUTPUT = HERE.parent / "src" / "voiced" / "types.py"

Schema = dict[str, Any]

HEADER = '''\
"""Wire types of the voiced API, generated from openapi/openapi.json.

Do not edit: run `python scripts/gen_types.py` in sdk/python after the document changes
(CI fails when this file is not what the document generates).
"""

# ruff: noqa
import sys
from typing import Any, Literal, Union

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:
    from typing_extensions import NotRequired, TypedDict

'''


def ref_name(ref: str) -> str:
    prefix = "#/components/schemas/"
    if not ref.startswith(prefix):
        raise SystemExit(f"unsupported $ref {ref}")
    return ref[len(prefix) :]


class Generator:
    def __init__(self, schemas: dict[str, Schema]) -> None:
        self.schemas = schemas
        # name -> (source text, names it depends on)
        self.defs: dict[str, tuple[str, set[str]]] = {}

    def type_of(self, schema: Schema, deps: set[str], hint: str) -> str:
        """The Python type of a schema used in a member or an alias."""
        if "$ref" in schema:
            name = ref_name(schema["$ref"])
            deps.add(name)
            return name
        for combinator in ("oneOf", "anyOf"):
            if combinator in schema:
                parts = [
                    self.type_of(sub, deps, hint) for sub in schema[combinator]
                ]
                return " | ".join(dict.fromkeys(parts))
        if "allOf" in schema and len(schema["allOf"]) == 1:
            return self.type_of(schema["allOf"][0], deps, hint)
        kinds = schema.get("type")
        if isinstance(kinds, list):
            parts = [self.type_of({**schema, "type": k}, deps, hint) for k in kinds]
            return " | ".join(dict.fromkeys(parts))
        if "enum" in schema:
            return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
        if kinds == "string":
            return "bytes" if schema.get("format") == "binary" else "str"
        if kinds == "integer":
            return "int"
        if kinds == "number":
            return "float"
        if kinds == "boolean":
            return "bool"
        if kinds == "null":
            return "None"
        if kinds == "array":
            return f"list[{self.type_of(schema.get('items', {}), deps, hint + 'Item')}]"
        if kinds == "object" or "properties" in schema:
            if not schema.get("properties"):
                return "dict[str, Any]"
            # An inline object with members: a TypedDict of its own, named after its place.
            self.define_object(hint, schema, [])
            deps.add(hint)
            return hint
        return "Any"

    def define(self, name: str, schema: Schema) -> None:
        if "allOf" in schema and len(schema["allOf"]) > 1:
            bases: list[str] = []
            merged: Schema = {"type": "object", "properties": {}, "required": []}
            for part in schema["allOf"]:
                if "$ref" in part:
                    bases.append(ref_name(part["$ref"]))
                else:
                    merged["properties"].update(part.get("properties", {}))
                    merged["required"].extend(part.get("required", []))
            merged["description"] = schema.get("description")
            self.define_object(name, merged, bases)
        elif schema.get("type") == "object" or "properties" in schema:
            self.define_object(name, schema, [])
        else:
            deps: set[str] = set()
            alias = self.type_of(schema, deps, name + "Object")
            text = comment(schema.get("description"), "") + f"{name} = {alias_expr(alias)}\n"
            self.defs[name] = (text, deps)

    def define_object(self, name: str, schema: Schema, bases: list[str]) -> None:
        deps = set(bases)
        required = set(schema.get("required", []))
        members: list[tuple[str, str, str | None]] = []
        for member, sub in sorted(schema.get("properties", {}).items()):
            typ = self.type_of(sub, deps, name + camel(member))
            if member not in required:
                typ = f"NotRequired[{typ}]"
            members.append((member, typ, sub.get("description")))
        doc = schema.get("description")
        if all(m.isidentifier() and not keyword.iskeyword(m) for m, _, _ in members):
            lines = [f"class {name}({', '.join(bases) or 'TypedDict'}):"]
            if doc:
                lines.append(docstring(doc))
            for member, typ, desc in members:
                lines.append(comment(desc, "    ") + f"    {member}: {typ}")
            if not doc and not members:
                lines.append("    pass")
            text = "\n".join(lines) + "\n"
        else:
            # A member that is no identifier (`timestamp_granularities[]`): the functional form.
            if bases:
                raise SystemExit(f"{name}: inheritance with non-identifier members is unsupported")
            body = "".join(f"        {json.dumps(m)}: {t},\n" for m, t, _ in members)
            text = comment(doc, "") + f'{name} = TypedDict(\n    "{name}",\n    {{\n{body}    }},\n)\n'
        self.defs[name] = (text, deps)

    def render(self) -> str:
        for name, schema in self.schemas.items():
            self.define(name, schema)
        # Definitions in dependency order (then by name), so that the module runs top to bottom.
        done: set[str] = set()
        out: list[str] = []

        def visit(name: str, path: tuple[str, ...]) -> None:
            if name in done:
                return
            if name in path:
                raise SystemExit(f"circular schemas: {' -> '.join(path + (name,))}")
            for dep in sorted(self.defs[name][1]):
                visit(dep, path + (name,))
            done.add(name)
            out.append(self.defs[name][0])

        for name in sorted(self.defs):
            visit(name, ())
        names = "".join(f'    "{n}",\n' for n in sorted(self.defs))
        return HEADER + "\n\n".join(out) + f"\n\n__all__ = [\n{names}]\n"


def camel(member: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in member.replace("[]", "").split("_"))


def alias_expr(alias: str) -> str:
    # `X | Y` of classes evaluates at run time on 3.10; Literal and None unions too.
    return f"Union[{alias.replace(' | ', ', ')}]" if " | " in alias else alias


def docstring(text: str) -> str:
    body = text.strip().replace('"""', "'''").replace("\\", "\\\\")
    lines = body.splitlines()
    if len(lines) == 1 and len(lines[0]) < 88:
        return f'    """{lines[0]}"""\n'
    return '    """' + "\n    ".join(lines) + '\n    """\n'


def comment(text: str | None, indent: str) -> str:
    if not text:
        return ""
    out: list[str] = []
    for paragraph in text.strip().splitlines():
        wrapped = textwrap.wrap(paragraph, width=96 - len(indent) - 2) or [""]
        out.extend(f"{indent}# {line}".rstrip() + "\n" for line in wrapped)
    return "".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the committed file differs")
    args = parser.parse_args()
    document = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    text = Generator(document["components"]["schemas"]).render()
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text(encoding="utf-8") != text:
            print(
                f"{OUTPUT.relative_to(HERE.parent)} differs from what openapi/openapi.json generates;"
                " run `python scripts/gen_types.py` in sdk/python and commit it.",
                file=sys.stderr,
            )
            return 1
        print("gen_types: src/voiced/types.py matches openapi/openapi.json")
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
