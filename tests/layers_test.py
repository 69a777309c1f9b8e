#!/usr/bin/env python3
"""The structure docs/architecture.md states, checked against src/:

- every #include "x.h" edge between src/ folders goes to the same or a lower
  layer, as the layer line of docs/architecture.md orders them ("Layers, top
  to bottom: app > tune > ..."; folders on one layer are separated by commas),
  and the folders' include graph has no cycle;
- no source file over MAX_FILE lines;
- no function over MAX_FUNCTION lines, counted from the line of its opening
  brace at column 0 to the line of its closing brace at column 0.

    tests/layers_test.py [SRC_DIR [ARCHITECTURE_MD]]

Prints the edges per folder pair and every breach; exits 1 on any."""
import os
import re
import sys

MAX_FILE = 700
MAX_FUNCTION = 60

src = sys.argv[1] if len(sys.argv) > 1 else "src"
doc = sys.argv[2] if len(sys.argv) > 2 else "docs/architecture.md"


def layer_order():
    for line in open(doc):
        m = re.match(r"\s*Layers, top to bottom:\s*(.+?)\s*$", line)
        if m:
            ranks = {}
            floors = [f.strip() for f in m.group(1).rstrip(".").split(">")]
            for i, floor in enumerate(floors):
                for name in floor.split(","):
                    ranks[name.strip().strip("`").rstrip("/")] = len(floors) - i
            return ranks
    sys.exit(f"layers: no 'Layers, top to bottom: ...' line in {doc}")


def folder_of(path):
    rel = os.path.relpath(path, src)
    return "app" if rel == "main.c" else rel.split(os.sep)[0]


def main():
    ranks = layer_order()
    files = []
    for root, _, names in os.walk(src):
        files += [os.path.join(root, n) for n in names if n.endswith((".c", ".h"))]
    where = {os.path.basename(f): folder_of(f) for f in files}
    edges, bad = {}, []
    for f in sorted(files):
        text = open(f, encoding="utf-8").read()
        mine = folder_of(f)
        if mine not in ranks:
            bad.append(f"{f}: folder {mine}/ is not in {doc}'s layer line")
            continue
        for inc in re.findall(r'^#include "([^"]+)"', text, re.M):
            theirs = where.get(os.path.basename(inc))
            if theirs and theirs != mine:
                edges.setdefault((mine, theirs), []).append(f"{os.path.basename(f)} -> {inc}")
                if ranks.get(theirs, 0) > ranks[mine]:
                    bad.append(f"{f}: includes {inc} of {theirs}/, a higher layer")
        lines = text.split("\n")
        if f.endswith(".c") and len(lines) - 1 > MAX_FILE:
            bad.append(f"{f}: {len(lines) - 1} lines, more than {MAX_FILE}")
        start = None
        for i, line in enumerate(lines):
            if line.startswith("{"):
                start = i
            elif line.startswith("}") and start is not None:
                if i - start > MAX_FUNCTION:
                    head = lines[start - 1].strip()
                    bad.append(f"{f}:{start + 1}: a function of {i - start} lines, more than "
                               f"{MAX_FUNCTION} ({head[:60]})")
                start = None
    # a cycle among folders: a depth-first search over the folder graph
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    state = {}

    def visit(n, path):
        state[n] = 1
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                bad.append("include cycle: " + " -> ".join(path + [n, m]))
            elif not state.get(m):
                visit(m, path + [n])
        state[n] = 2

    for n in sorted(graph):
        if not state.get(n):
            visit(n, [])
    for (a, b), why in sorted(edges.items()):
        print(f"  {a}/ -> {b}/: {len(why)} include{'s' if len(why) > 1 else ''}")
    for b in bad:
        print("FAIL: " + b)
    print(f"layers: {0 if bad else 1} passed, {len(bad)} failed")
    return 1 if bad else 0


sys.exit(main())
