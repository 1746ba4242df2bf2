#!/usr/bin/python3
"""What calling the engine from Python costs: attn encode's and attn tutorial's runs from Python against
the CLI's in-process time for the same options, best of N each, as ratios (docs/python.md).

    PYTHONPATH=build/python /usr/bin/python3 tests/python/bench_encode.py [REPEATS]

The CLI's in-process time is what attn's main spends after the process has started: parsing the
options, computing, and formatting its --json document (printed into a discarded buffer), timed in C++
(`_attnlab.command_seconds`). Python's is `attnlab.encode(...)` as a user calls it (the keywords turned
into arguments, the same parser, the trace handed over without formatting), and the same with
`.to_json()` (the same document as the CLI prints).
"""
import platform
import sys
import time

import attnlab
from attnlab import _attnlab

CASES = [
    ("tutorial", dict(), ["tutorial", "--json"], attnlab.tutorial),
    ("encode", dict(), ["encode", "--json"], attnlab.encode),
    ("encode, 2 layers x 4 heads", dict(num_layers=2, num_heads=4), ["encode", "--num-layers", "2", "--num-heads", "4", "--json"],
     attnlab.encode),
]


def best(call, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor()


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    print(f"machine: {cpu_name()}; Python {platform.python_version()}; best of {repeats}")
    print(f"{'case':28} {'CLI in-process':>15} {'Python':>10} {'ratio':>6} {'+to_json':>10} {'ratio':>6}")
    for name, options, args, function in CASES:
        function(**options)  # warm: first-call costs (page faults, caches) out of the figures
        cli = _attnlab.command_seconds(args, repeats)
        py = best(lambda: function(**options), repeats)
        py_json = best(lambda: function(**options).to_json(), repeats)
        print(f"{name:28} {cli * 1e3:12.3f} ms {py * 1e3:7.3f} ms {py / cli:6.2f} {py_json * 1e3:7.3f} ms {py_json / cli:6.2f}")


if __name__ == "__main__":
    main()
