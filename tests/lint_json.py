#!/usr/bin/env python3
"""Finds integers read from JSON without a check: nlohmann's get<integer type>() (or get_to, or
value(key, number)) converts a float outside the type's range with undefined behaviour and wraps a
negative into a count, so every source reads integers through json_integer / json_field
(core/base/json.hpp), the one place allowed to call get<integer>(). Implicit conversions are compiled
out (JSON_USE_IMPLICIT_CONVERSIONS=0). Exit 1 with each breach listed; `--self-test` checks the
patterns on lines that must and must not match."""
import pathlib
import re
import sys

INTEGER = r"(?:std::)?(?:Shape|u?int(?:8|16|32|64)?_t|size_t|ptrdiff_t|ssize_t|int|unsigned(?:\s+\w+)?|long(?:\s+long)?|short|char)"
PATTERNS = [
    re.compile(r"\bget\s*<\s*(?:std::vector\s*<\s*)?" + INTEGER + r"\s*>"),  # get<size_t>(), get<std::vector<int>>()
    re.compile(r"\bget_to\s*\("),                                          # get_to(an integer)
    re.compile(r"\.value\s*\(\s*\"[^\"]*\"\s*,\s*-?\d"),                     # value("key", 0)
]
ALLOWED = {"core/base/json.hpp"}
FOLDERS = ["core", "native", "ui", "web", "python"]


def breaches(text):
    return [n for n, line in enumerate(text.splitlines(), 1) if any(p.search(line) for p in PATTERNS)]


def self_test():
    bad = ["j.get<size_t>()", "j[\"k\"].get<int64_t>()", "v.template get<std::uint64_t>()", "j.get<int>()",
           "j.get<std::vector<uint64_t>>()", "j.get<Shape>()", "j.at(\"n\").get_to(n)", "j.value(\"n\", 0)", "v.get< unsigned long >()"]
    good = ["j.get<std::string>()", "j.get<float>()", "j.get<double>()", "json_integer<size_t>(j, \"n\")",
            "j.get<bool>()", "j.value(\"weights\", \"\")", "std::get<0>(t)"]
    wrong = [line for line in bad if not breaches(line)] + [line for line in good if breaches(line)]
    if wrong:
        sys.exit("lint_json.py's patterns are wrong on: " + ", ".join(wrong))


self_test()
root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
found = []
for folder in FOLDERS:
    for source in sorted((root / folder).rglob("*")):
        relative = source.relative_to(root).as_posix()
        if source.suffix not in (".hpp", ".cpp", ".h", ".inc") or relative in ALLOWED:
            continue
        found += [f"{relative}:{n}" for n in breaches(source.read_text(errors="replace"))]
if found:
    print("integers read from JSON without json_integer (core/base/json.hpp):\n  " + "\n  ".join(found))
    sys.exit(1)
print(f"lint_json: no unchecked JSON integer in {', '.join(FOLDERS)}")
