#!/usr/bin/python3
"""`attn encode --plot STAGE --svg FILE` read back by an XML parser (Python's xml.etree): one <rect> per
cell in row-major order whose fill is the colour of the trace's value (viridis / RdBu_r key colours,
interpolated as docs/compare.md states, over the slice's range) and whose <title> holds the value
exactly; the tokens (Hangul included) as <text> on the axes; a font named; nothing rasterised. Cases:
the classifier's attention weights of item 1, head 2 (Korean tokens); a diverging stage of 128 columns
(labels thinned); masked scores (grey cells);
the tiny GPT-2's weights (byte-level tokens); a BERT stage. The same slice as --csv (read by Python's csv
module: the labels and every value exactly), --tex (one \\cellcolor per cell in the SVG's colours) and
--png at scales 1 and 4 (16 times the pixels; each cell's pixels its colour); a text of 2,048 tokens.
Bad uses exit 2 with
nothing written.
    /usr/bin/python3 tests/svg_check.py path/to/attn
"""
import csv
import json
import pathlib
import re
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import check_png  # noqa: E402  (its PNG decoder)
PRETRAINED = HERE / "fixtures" / "pretrained"
NS = {"svg": "http://www.w3.org/2000/svg"}
VIRIDIS = [(68, 1, 84), (71, 44, 122), (59, 81, 139), (44, 113, 142), (33, 144, 141), (39, 173, 129),
           (92, 200, 99), (170, 220, 50), (253, 231, 37)]
RDBU = [(33, 102, 172), (103, 169, 207), (209, 229, 240), (247, 247, 247), (253, 219, 199), (239, 138, 98),
        (178, 24, 43)]
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def colour(stops, t):
    t = min(max(t, 0.0), 1.0)
    x = t * (len(stops) - 1)
    i = min(int(x), len(stops) - 2)
    f = x - i
    return "#" + "".join(f"{round(stops[i][k] * (1 - f) + stops[i + 1][k] * f):02x}" for k in range(3))


def expected_fills(values, sequential, mask):
    real = [v for v in values if v > -1e8]
    lo, hi = (0.0, 1.0) if mask else (min(real), max(real))
    if not sequential and not mask:
        lo, hi = -max(abs(lo), abs(hi)), max(abs(lo), abs(hi))
    stops = VIRIDIS if sequential else RDBU
    return ["#606060" if v <= -1e8 else colour(stops, (v - lo) / (hi - lo) if hi > lo else 0.5) for v in values]


def run(attn, args):
    return subprocess.run([attn, "encode", *args], capture_output=True, text=True, timeout=120)


def check_figure(attn, tmp, name, args, stage, index, sequential, label_axes):
    svg, table, tex, png1, png4 = (tmp / f"{name}{ext}" for ext in (".svg", ".csv", ".tex", "_1.png", "_4.png"))
    plot = [*args, "--plot", stage, "--plot-index", ",".join(map(str, index))]
    r = run(attn, [*plot, "--svg", str(svg), "--csv", str(table), "--tex", str(tex), "--png", str(png4), "--scale", "4",
                   "--json"])
    run(attn, [*plot, "--png", str(png1)])
    check(r.returncode == 0, f"{name}: attn encode --plot {stage} --svg (exit {r.returncode}) {r.stderr.strip()}")
    if r.returncode:
        return
    doc = json.loads(r.stdout)
    st = next(s for s in doc["stages"] if s["name"] == stage)
    shape, data = st["shape"], st["data"]
    rows, cols = shape[-2], shape[-1]
    offset = 0
    for axis, i in enumerate(index):
        offset = offset * shape[axis] + i
    offset *= rows * cols
    values = [f32(v) for v in data[offset:offset + rows * cols]]
    root = ET.parse(svg).getroot()  # raises on malformed XML
    cells = root.findall(".//svg:rect[@class='cell']", NS)
    check(len(cells) == rows * cols, f"{name}: {len(cells)} cells for a {rows} x {cols} slice")
    fills = [c.get("fill") for c in cells]
    want = expected_fills(values, sequential, stage == "mask")
    if any(v <= -1e8 for v in values):
        check("#606060" in fills, f"{name}: masked cells are grey")
    bad = sum(a != b for a, b in zip(fills, want))
    check(bad == 0, f"{name}: every cell's fill is its value's colour ({bad} differ)")
    got = [f32(float(c.find("svg:title", NS).text.split(": ")[1])) for c in cells]
    check(got == values, f"{name}: every cell's title holds its value exactly")
    check("NanumGothic" in root.get("font-family", ""), f"{name}: the font is named ({root.get('font-family')})")
    check(not root.findall(".//svg:image", NS), f"{name}: nothing rasterised (no <image>)")
    check_numbers(name, table, tex, values, want, rows, cols)
    check_pngs(name, png1, png4, want, rows, cols)
    tokens = doc["tokens"][index[0]]
    for axis in label_axes:
        texts = [t.text for t in root.findall(f".//svg:g[@class='{axis}-labels']/svg:text", NS)]
        n = rows if axis == "row" else cols
        every = 1 if n <= 40 else next(k for k in range(1, n + 1) if tokens[::k] == texts)  # thinned past 40
        check(texts == tokens[::every], f"{name}: the {axis} labels are the tokens {texts}")
    return root


def check_numbers(name, table, tex, values, fills, rows, cols):
    with open(table, newline="", encoding="utf-8") as f:
        lines = list(csv.reader(f))
    check(len(lines) == rows + 1 and all(len(line) == cols + 1 for line in lines) and lines[0][0] == "",
          f"{name}: the CSV has a header and {rows} rows of a label and {cols} values")
    got = [f32(float(v)) for line in lines[1:] for v in line[1:]]
    check(got == values, f"{name}: the CSV holds every value exactly")
    latex = tex.read_text(encoding="utf-8")
    colours = ["#%02x%02x%02x" % tuple(map(int, m.split(","))) for m in re.findall(r"\\cellcolor\[RGB\]\{([0-9,]+)\}", latex)]
    check(colours == fills and latex.count("\\begin{tabular}") == 1 and latex.rstrip().endswith("\\end{tabular}"),
          f"{name}: the LaTeX table colours its {len(colours)} cells as the SVG does")


def check_pngs(name, png1, png4, fills, rows, cols):
    w1, h1, _, _ = check_png.decode(png1)
    w4, h4, channels, pixels = check_png.decode(png4)
    check(w1 % cols == 0 and h1 % rows == 0 and (w4, h4) == (4 * w1, 4 * h1),
          f"{name}: the PNG at 4x is {w4}x{h4}, 16 times the pixels of 1x ({w1}x{h1})")
    cell = w4 // cols
    centre = ["#%02x%02x%02x" % tuple(pixels[i * cell + cell // 2][(j * cell + cell // 2) * channels:][:3])
              for i in range(rows) for j in range(cols)]
    check(centre == fills, f"{name}: each cell of the PNG is its value's colour")


def check_long_input(attn, tmp):
    """A text of 2,048 words from a file, within --max-len: its attention map as a 2048 x 2048 PNG (one
    pixel a cell) and CSV; one token over max_len is refused, naming both."""
    text = tmp / "long.txt"
    text.write_text(" ".join(f"w{i % 700}" for i in range(2048)) + "\n", encoding="utf-8")
    png, table = tmp / "long.png", tmp / "long.csv"
    r = run(attn, ["--sentences-file", str(text), "--max-len", "2048", "--plot", "layers.3.self_attn.attention_weights",
                   "--plot-index", "0,7", "--png", str(png), "--csv", str(table)])
    size = struct.unpack(">II", png.read_bytes()[16:24]) if r.returncode == 0 else None
    check(r.returncode == 0 and size == (2048, 2048), f"2,048 tokens from a file: a {size} PNG of the map (exit {r.returncode})")
    lines = table.read_text(encoding="utf-8").splitlines() if r.returncode == 0 else []
    check(len(lines) == 2049 and lines[0].split(",")[1:4] == ["w0", "w1", "w2"], f"and its CSV ({len(lines)} lines)")
    r = run(attn, ["--sentences-file", str(text), "--max-len", "2047"])
    check(r.returncode == 2 and "2048 tokens, more than max_len 2047" in r.stderr, f"over max_len: {r.stderr.strip()}")


def main():
    attn = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        check_figure(attn, tmp, "classifier", [], "layers.0.self_attn.attention_weights", [1, 2], True, ["row", "col"])
        check_figure(attn, tmp, "diverging", [], "layers.1.norm1", [3], False, ["row"])
        check_figure(attn, tmp, "masked", ["--mask", "padding+causal"], "layers.0.self_attn.scores", [3, 0], False,
                     ["row", "col"])
        gpt2 = ["--model-dir", str(PRETRAINED / "gpt2_tiny"), "--sentence", "the cat sat on 고양이 <&>"]
        check_figure(attn, tmp, "gpt2", gpt2, "h.1.attn.attn_weights", [0, 1], True, ["row", "col"])
        bert = ["--model-dir", str(PRETRAINED / "bert_tiny"), "--sentence", "나는 학교에 간다"]
        check_figure(attn, tmp, "bert", bert, "encoder.layer.0.attention.self.attention_probs", [0, 0], True, ["row", "col"])
        check_long_input(attn, tmp)
        out = tmp / "refused.svg"
        for args, message in [(["--plot", "layers.0.norm9", "--svg", str(out)], "no stage 'layers.0.norm9'"),
                              (["--plot", "pooled"], "--plot STAGE goes with --svg, --png, --csv or --tex FILE"),
                              (["--plot", "pooled", "--png", str(out), "--scale", "17"], "--scale must be 1 to 16"),
                              (["--plot", "pooled", "--svg", str(out), "--scale", "2"], "--scale applies to --png"),
                              (["--plot-index", "1"], "--plot-index applies to --plot"),
                              (["--plot", "pooled", "--svg", str(out), "--plot-index", "0"], "'pooled' has 0 leading axes"),
                              (["--plot", "layers.0.self_attn.scores", "--svg", str(out), "--plot-index", "9"],
                               "index 9 on an axis of 4"),
                              (["--plot", "layers.0.self_attn.scores", "--svg", str(out), "--plot-index", "0,x"],
                               "--plot-index"),
                              (["--plot", "pooled", "--svg", str(tmp / "no" / "f.svg")], "no/f.svg")]:
            r = run(attn, args)
            check(r.returncode == 2 and message in r.stderr and not out.exists(), f"refused: {message} ({r.stderr.strip()})")
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")


main()
