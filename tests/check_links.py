#!/usr/bin/env python3
"""Checks the links of the documentation (README.md, docs/, every folder's README.md): each relative
link names a file or folder of the repository (and a heading there, for #anchors); none leaves the
repository. Exit 1 with each broken link listed. Usage: check_links.py [REPOSITORY_ROOT]"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent).resolve()
skip = {".git", ".deps", "node_modules", "shared"}
pages = [p for p in sorted(root.rglob("*.md"))
         if not skip & set(p.relative_to(root).parts) and not p.relative_to(root).parts[0].startswith("build")]
link = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page):
    """GitHub's heading ids: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.*)$", text, re.M)}


broken = []
for page in pages:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # code is not links
    for target in link.findall(text):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto: are outside this check
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(root)}: {target}"
        if root not in dest.parents and dest != root:
            broken.append(f"{where}: outside the repository")
        elif not dest.exists():
            broken.append(f"{where}: no such file")
        elif anchor and (dest.suffix != ".md" or anchor not in anchors(dest)):
            broken.append(f"{where}: no such heading")
print(f"{len(pages)} pages checked")
if broken:
    sys.exit("broken links:\n" + "\n".join(broken))
