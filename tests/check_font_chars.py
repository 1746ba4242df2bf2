#!/usr/bin/env python3
"""Every character of the UI's texts (ui/strings_table.inc) has a glyph: it is in the web font subset's
character list (web/font_chars.py) and in NanumGothic, the font both shells load (pyftsubset drops what
the font lacks, and ImGui draws '?' for it).
Usage: check_font_chars.py REPO_ROOT [FONT.ttf]"""
import os
import sys

root = sys.argv[1]
font = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/fonts/truetype/nanum/NanumGothic.ttf"
sys.path.insert(0, os.path.join(root, "web"))
import font_chars  # noqa: E402
from fontTools.ttLib import TTFont  # noqa: E402

table = os.path.join(root, "ui", "strings_table.inc")
used = font_chars.table_chars(table)
subset = set(font_chars.subset_chars(table))
cmap = TTFont(font).getBestCmap()
missing = sorted(c for c in used if c not in subset or (ord(c) >= 0x20 and ord(c) not in cmap))
print(f"{len(used)} characters in the UI's texts; {len(missing)} without a glyph")
for c in missing:
    print(f"  U+{ord(c):04X} {c!r}: {'not in the subset list' if c not in subset else 'not in ' + os.path.basename(font)}")
sys.exit(1 if missing else 0)
