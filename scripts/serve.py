#!/usr/bin/env python3
"""Serves the web playground's static files, cross-origin isolated: every response carries the
Cross-Origin-Opener-Policy and Cross-Origin-Embedder-Policy headers SharedArrayBuffer needs, so the
page opens the threaded build (THREADED_SITE, served under /mt/) when it is there.

Usage: serve.py SITE [THREADED_SITE] [--port 8000] [--bind 127.0.0.1]
A static host does the same with those two headers (same-origin, require-corp) and the threaded site
copied into SITE/mt/; without them the page runs its single-threaded build and says so."""
import argparse
import functools
import http.server
import os


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, threaded=None, **kwargs):
        self.threaded = threaded
        super().__init__(*args, **kwargs)

    def translate_path(self, path):
        if self.threaded and (path == "/mt" or path.startswith("/mt/")):
            inner = super().translate_path(path[3:] or "/")  # under SITE, then moved to THREADED_SITE
            return os.path.join(self.threaded, os.path.relpath(inner, self.directory))
        return super().translate_path(path)

    def end_headers(self):
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site")
    parser.add_argument("threaded_site", nargs="?")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--bind", default="127.0.0.1")
    a = parser.parse_args()
    threaded = os.path.abspath(a.threaded_site) if a.threaded_site and os.path.isdir(a.threaded_site) else None
    handler = functools.partial(Handler, directory=os.path.abspath(a.site), threaded=threaded)
    with http.server.ThreadingHTTPServer((a.bind, a.port), handler) as server:
        server.serve_forever()


if __name__ == "__main__":
    main()
