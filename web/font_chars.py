#!/usr/bin/env python3
"""Writes the characters the web playground's font subset keeps: printable ASCII, a few symbols, every
Hangul syllable (U+AC00-U+D7A3, all 11,172, not only KS X 1001's 2,350) and the Hangul jamo blocks
(conjoining U+1100-U+11FF, compatibility U+3131-U+318E, extended A and B). pyftsubset keeps those
NanumGothic has (all syllables and compatibility jamo; 69 conjoining jamo; no extended jamo).
NanumGothic builds most syllables as composites of shared outlines, so all of them cost only a few
per cent more than KS X 1001's. Usage: font_chars.py OUT.txt"""
import sys

ranges = [(0x20, 0x7E), (0x1100, 0x11FF), (0x3131, 0x318E), (0xA960, 0xA97C), (0xAC00, 0xD7A3), (0xD7B0, 0xD7FB)]
chars = [chr(c) for lo, hi in ranges for c in range(lo, hi + 1)]
chars += list("·×÷…√→–—‘’“”")
with open(sys.argv[1], "w", encoding="utf-8") as f:
    f.write("".join(chars))
