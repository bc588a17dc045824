#!/usr/bin/env python3
"""Lists Rust functions longer than N lines (default 100), longest first.

   scripts/fnlen.py [DIR] [N]      DIR defaults to crates/

A function runs from its `fn` line to the closing brace at the same indentation (rustfmt's
layout); one-line declarations are skipped. docs/architecture.md ("Large files") names the
ones that stay long on purpose.
"""
import os
import re
import sys

FN = re.compile(r'^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?'
                r'(extern\s+"C"\s+)?fn\s+(\w+)')


def functions(path):
    lines = open(path, errors="replace").read().split("\n")
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m or line.rstrip().endswith(";"):
            continue
        end = m.group(1) + "}"
        for j in range(i + 1, len(lines)):
            if lines[j] == end:
                yield j - i + 1, i + 1, m.group(8)
                break


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else "crates"
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    found = []
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in ("target", "fuzz")]
        for f in files:
            if f.endswith(".rs"):
                p = os.path.join(root, f)
                found += [(n, p, line, name) for n, line, name in functions(p) if n > limit]
    for n, p, line, name in sorted(found, reverse=True):
        print(f"{n:5} {p}:{line} {name}")


if __name__ == "__main__":
    main()
