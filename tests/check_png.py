#!/usr/bin/env python3
"""Checks a screenshot of the playground: a PNG of the expected size that is not blank (many colours,
including the heatmap's viridis yellow and purple). Usage: check_png.py FILE WIDTH HEIGHT"""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), "unsupported PNG"
            channels = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            p = [0, a, b, (a + b) // 2][f] if f < 4 else min((a, b, c), key=lambda v: (abs(a + b - c - v), [a, b, c].index(v)))
            line[i] = (line[i] + p) & 255
        rows.append(line)
        prev = line
    return width, height, channels, rows


def main():
    width, height, channels, rows = decode(sys.argv[1])
    assert (width, height) == (int(sys.argv[2]), int(sys.argv[3])), f"size {width}x{height}"
    colours = set()
    for line in rows[::2]:
        for x in range(0, width * channels, channels * 2):
            colours.add(bytes(line[x:x + 3]))
    near = lambda want: any(all(abs(c[k] - want[k]) <= 6 for k in range(3)) for c in colours)
    print(f"{sys.argv[1]}: {width}x{height}, {len(colours)} colours")
    assert len(colours) > 50, "blank or nearly blank screenshot"
    assert near((68, 1, 84)) or near((71, 44, 122)), "no dark viridis cell"
    assert near((253, 231, 37)) or near((170, 220, 50)), "no bright viridis cell"
    print("ok: the UI and its heatmap are on screen")


if __name__ == "__main__":
    main()
