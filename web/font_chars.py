#!/usr/bin/env python3
"""Writes the characters the web playground's font subset keeps: printable ASCII, a few symbols, the
Hangul compatibility jamo and the 2,350 Hangul syllables of KS X 1001 (those EUC-KR can encode), so
common Korean text renders while the font stays small. Usage: font_chars.py OUT.txt"""
import sys

chars = [chr(c) for c in range(0x20, 0x7F)]
chars += list("·×÷…√→–—‘’“”")
for c in list(range(0x3131, 0x318F)) + list(range(0xAC00, 0xD7A4)):
    ch = chr(c)
    try:
        ch.encode("euc_kr")
    except UnicodeEncodeError:
        continue
    chars.append(ch)
with open(sys.argv[1], "w", encoding="utf-8") as f:
    f.write("".join(chars))
