#!/usr/bin/env python3
"""Writes the characters the web playground's font subset keeps: printable ASCII, a few symbols, every
Hangul syllable (U+AC00-U+D7A3, all 11,172, not only KS X 1001's 2,350), the Hangul jamo blocks
(conjoining U+1100-U+11FF, compatibility U+3131-U+318E, extended A and B) and every character of the
UI's texts (ui/strings_table.inc, when given). pyftsubset keeps those NanumGothic has (all syllables and
compatibility jamo; 69 conjoining jamo; no extended jamo); tests/check_font_chars.py checks that the
font has every character the texts use. NanumGothic builds most syllables as composites of shared
outlines, so all of them cost only a few per cent more than KS X 1001's.
Usage: font_chars.py OUT.txt [strings_table.inc]"""
import re
import sys

ranges = [(0x20, 0x7E), (0x1100, 0x11FF), (0x3131, 0x318E), (0xA960, 0xA97C), (0xAC00, 0xD7A3), (0xD7B0, 0xD7FB)]


def table_chars(path):
    """The characters of every C string literal in the table (comments skipped, \\uXXXX decoded)."""
    text = "\n".join(line for line in open(path, encoding="utf-8") if not line.lstrip().startswith("//"))
    out = set()
    for literal in re.findall(r'"((?:[^"\\]|\\.)*)"', text):
        decoded = re.sub(r"\\u([0-9A-Fa-f]{4})", lambda m: chr(int(m.group(1), 16)), literal)
        out.update(decoded.replace('\\"', '"').replace("\\\\", "\\"))
    return out


def subset_chars(table=None):
    """The characters to keep, in order: the ranges, the symbols, then the table's others."""
    chars = [chr(c) for lo, hi in ranges for c in range(lo, hi + 1)]
    chars += list("·×÷…√→←–—‘’“”")
    if table:
        chars += sorted(table_chars(table) - set(chars))
    return chars


if __name__ == "__main__":
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        f.write("".join(subset_chars(sys.argv[2] if len(sys.argv) > 2 else None)))
