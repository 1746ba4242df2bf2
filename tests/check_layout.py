#!/usr/bin/env python3
"""Checks core/'s folder rules: each folder includes only the folders its README's "May use:" line
names, nothing in core includes a window, GL or GUI header, and ui/ (both shells' UI) includes neither
shell (native/, web/). Exit 1 with each breach listed."""
import pathlib
import re
import sys

core = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / "core")
folders = sorted(p for p in core.iterdir() if p.is_dir())
allowed = {}
for folder in folders:
    readme = folder / "README.md"
    match = re.search(r"^May use: (.*)\.$", readme.read_text(), re.M) if readme.exists() else None
    if not match:
        sys.exit(f"{readme}: no 'May use: ….' line")
    uses = match.group(1)
    allowed[folder.name] = set() if uses == "nothing else in core" else {u.strip() for u in uses.split(",")}

breaches = []
for folder in folders:
    for source in sorted(folder.iterdir()):
        if source.suffix not in (".hpp", ".cpp"):
            continue
        for number, line in enumerate(source.read_text().splitlines(), 1):
            include = re.match(r'\s*#\s*include\s*[<"]([^>"]+)[>"]', line)
            if not include:
                continue
            path = include.group(1)
            where = f"{source.relative_to(core.parent)}:{number}: {path}"
            # emscripten/heap.h is the platform's memory (core/base/memory.cpp), not the page or its window.
            if path == "emscripten/heap.h":
                continue
            if re.match(r"(imgui|GL|GLFW|EGL|emscripten)", path, re.I) or path.startswith(("ui/", "native/", "web/")):
                breaches.append(f"{where}: core includes a front end's or window header")
            elif path.startswith("core/"):
                parts = path.split("/")
                if len(parts) != 3 or parts[1] not in allowed:
                    breaches.append(f"{where}: not in a core folder")
                elif parts[1] != folder.name and parts[1] not in allowed[folder.name]:
                    breaches.append(f"{where}: core/{folder.name} may not use core/{parts[1]}")
    if not any(folder.iterdir()):
        breaches.append(f"{folder}: empty")
for source in sorted((core.parent / "ui").glob("*.[ch]pp")):
    for number, line in enumerate(source.read_text().splitlines(), 1):
        include = re.match(r'\s*#\s*include\s*"((native|web)/[^"]+)"', line)
        if include:
            breaches.append(f"ui/{source.name}:{number}: {include.group(1)}: the UI includes a shell's code")
stray = [p.name for p in core.iterdir() if p.is_file() and p.suffix in (".hpp", ".cpp")]
breaches += [f"core/{name}: sources belong in a folder" for name in stray]
print("\n".join(breaches) or f"layout: {len(folders)} folders follow their rules")
sys.exit(1 if breaches else 0)
