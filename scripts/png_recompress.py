#!/usr/bin/env python3
"""Rewrites a screenshot PNG smaller, same pixels: drops an alpha channel that is opaque everywhere,
picks each row's PNG filter by the smallest sum of absolute values (the usual heuristic), and
deflates at zlib's level 9 (stb's writer, which attn-gui uses, compresses far less).
Usage: png_recompress.py IN.png OUT.png"""
import pathlib
import struct
import sys
import zlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from check_png import decode  # noqa: E402  (the tests' PNG reader: one decoder in the project)


def filtered(line, prev, bpp):
    """The five PNG filters of one row; each begins with its filter type byte."""
    left = bytes(bpp) + line[:-bpp]
    upleft = bytes(bpp) + prev[:-bpp]
    def paeth(a, b, c):
        p = a + b - c
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        return a if pa <= pb and pa <= pc else b if pb <= pc else c
    return [bytes([0]) + line,
            bytes([1]) + bytes((x - a) & 255 for x, a in zip(line, left)),
            bytes([2]) + bytes((x - b) & 255 for x, b in zip(line, prev)),
            bytes([3]) + bytes((x - (a + b) // 2) & 255 for x, a, b in zip(line, left, prev)),
            bytes([4]) + bytes((x - paeth(a, b, c)) & 255 for x, a, b, c in zip(line, left, prev, upleft))]


def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def main():
    width, height, channels, rows = decode(sys.argv[1])
    if channels == 4 and all(line[3::4] == b"\xff" * width for line in rows):
        rows, channels = [bytes(b for i, b in enumerate(line) if i % 4 != 3) for line in rows], 3
    raw, prev = bytearray(), bytes(width * channels)
    for line in rows:
        line = bytes(line)
        raw += min(filtered(line, prev, channels), key=lambda f: sum(b if b < 128 else 256 - b for b in f[1:]))
        prev = line
    header = struct.pack(">IIBBBBB", width, height, 8, 6 if channels == 4 else 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + chunk(b"IEND", b"")
    pathlib.Path(sys.argv[2]).write_bytes(png)


if __name__ == "__main__":
    main()
