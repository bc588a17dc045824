#!/usr/bin/env python3
"""Keeps docs/vocabulary.md's "Every type, by crate" section in step with the core crates.

   scripts/vocabulary.py          rewrite that section from the code (the first sentence of
                                  each public type's documentation, or of its module's essay)
   scripts/vocabulary.py --check  list the public types the page does not name; exit 1 if any

Types the hand-written tables above the section already name are not repeated.
"""
import os
import re
import sys

CRATES = ["packet", "classifier", "netdev", "ofproto", "datapath", "ferrovsd"]
PAGE = "docs/vocabulary.md"
MARK = "\n## Every type, by crate"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def first_sentence(text):
    """Up to the first full stop outside parentheses and backquotes, links made plain."""
    depth, code = 0, False
    for i, ch in enumerate(text):
        if ch == "`":
            code = not code
        elif not code and ch == "(":
            depth += 1
        elif not code and ch == ")":
            depth = max(0, depth - 1)
        elif ch == "." and not code and depth == 0 and text[i + 1 : i + 2] in (" ", ""):
            text = text[:i]
            break
    text = re.sub(r"\[(`[^`]*`)\](\([^)]*\))?", r"\1", text)
    return text.replace("|", "\\|")


def module_doc(lines):
    for line in lines:
        if line.startswith("//!"):
            t = line[3:].strip()
            if t and not t.startswith("#"):
                return t
    return ""


def public_types():
    """(crate, path, first sentence) of every top-level public struct, enum and trait."""
    out = []
    for crate in CRATES:
        src = os.path.join(ROOT, "crates", crate, "src")
        for root, _, files in os.walk(src):
            for f in sorted(files):
                if not f.endswith(".rs"):
                    continue
                p = os.path.join(root, f)
                lines = open(p, encoding="utf-8").read().split("\n")
                parts = os.path.relpath(p, src)[:-3].split(os.sep)
                if parts[-1] == "mod":
                    parts = parts[:-1]
                if parts in (["lib"], ["main"]):
                    parts = []
                for i, line in enumerate(lines):
                    m = re.match(r"pub (struct|enum|trait) ([A-Za-z0-9_]+)", line)
                    if not m:
                        continue
                    j, doc = i - 1, []
                    while j >= 0 and lines[j].strip().startswith("#["):
                        j -= 1
                    while j >= 0 and lines[j].strip().startswith("///"):
                        doc.insert(0, lines[j].strip()[3:].strip())
                        j -= 1
                    text = " ".join(doc)
                    if not text or text.startswith("See the module doc"):
                        text = module_doc(lines)
                    name = m.group(2)
                    out.append((crate, name, "::".join([crate] + parts + [name]), first_sentence(text)))
    return out


def main():
    page = open(os.path.join(ROOT, PAGE), encoding="utf-8").read()
    head = page.split(MARK)[0].rstrip()
    types = public_types()
    if "--check" in sys.argv:
        missing = [t[2] for t in types if not re.search(r"\b" + re.escape(t[1]) + r"\b", page)]
        for m in missing:
            print(m)
        return 1 if missing else 0
    out = [head, MARK.strip(), "",
           "The other public types of the core crates, one line each: the first sentence of the type's",
           "own documentation (or of its module's), which says more. `scripts/vocabulary.py` rewrites",
           "this section from the code; `scripts/vocabulary.py --check` lists the types this page misses.",
           ""]
    for crate in CRATES:
        rows = sorted((p, s) for c, n, p, s in types
                      if c == crate and not re.search(r"\b" + re.escape(n) + r"\b", head))
        out += [f"### {crate}", "", "| type | what it is |", "|---|---|"]
        out += [f"| `{p}` | {s} |" for p, s in rows]
        out.append("")
    open(os.path.join(ROOT, PAGE), "w", encoding="utf-8").write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
