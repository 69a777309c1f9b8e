#!/usr/bin/python3
"""The sample outputs in README.md and docs/*.md against the current binary
(docs/testing.md, "Sample outputs"):

1. each fenced block marked by a line `<!-- sample: NAME -->` directly above
   it is a run of the lines of bench_results/sample/NAME (its two header
   lines left out), verbatim but for trailing spaces; a line `...` in the
   block stands for one or more lines left out, and a first line `$ CMD`
   shows the command (a warning when it is not the file's `# command:`);
2. scripts/readme-sample.sh, run into a temporary folder with the binary,
   writes every committed sample again, no other, and each new file has the
   committed one's form: its `# command:` line is the same, and its lines
   match with numbers, dates and commit hashes masked (a JSON body: the same
   keys and value types at every level instead). Lines whose words the
   machine or the timing chooses are compared by their label only, and
   warning lines, which come and go with the machine's load, are left out
   (VOLATILE and OPTIONAL below). A change of format fails here until the
   samples are regenerated: scripts/readme-sample.sh, then commit
   bench_results/sample/.
3. Warnings, not failures: a block that is not marked but looks like
   dpbench's output (its first line starts with "#", "$ ", "dpbench:",
   "progress:" or "run,point,", or is a lone "{"), unless the line above it
   is `<!-- not a sample: WHY -->`.
   docs/configuration.md is generated and checked by make test-docs.

    tests/samples_test.py [--bin ./dpbench] [--no-run] [--update-blocks]

After scripts/readme-sample.sh has regenerated the samples, --update-blocks
copies their new lines into the marked blocks (each block line replaced by
the sample line of the same form) before checking.

Prints each failure, then "samples: N passed, N failed". Debian's python3,
standard library only."""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

SAMPLES = "bench_results/sample"
SCRIPT = "scripts/readme-sample.sh"
MARK = re.compile(r"^<!-- sample: (\S+) -->\s*$")
NOT_SAMPLE = re.compile(r"^<!-- not a sample: .+ -->\s*$")
LOOKS_LIKE_OUTPUT = re.compile(r"^(#|\$ |dpbench:|progress:|run,point,|\{\s*$)")
ELISION = "..."
# lines whose words depend on the machine or on the timing: only the label
# before the first colon is compared
VOLATILE = ("# machine:", "# build:", "# blas:", "# verdict:", "# conclusion:")
# lines that come and go with the machine's load or the run's noise
OPTIONAL = re.compile(r"^(# warning:|warning:|dpbench: warning:|progress:)")
# words the measurement chooses, masked like numbers
CHOSEN = re.compile(r"\b(faster|slower|same|undecided|input-bound|copy-bound|compute-bound|"
                    r"input|copy|compute|balanced|OpenBLAS|libxsmm)\b")
DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|\d{8}-\d{6}")
# a commit hash: hex with a letter and a digit, or all letters as the build
# prints it, "(cfeacda)" (all digits is a NUMBER)
HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b|(?<=\()[a-f]{7,40}\b")
NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
# what an undecided verdict adds in a sweep's table (after the numbers are
# masked): how many rounds would decide it, which a decided one leaves out
UNDECIDED_NOTE = re.compile(r"\s*\((?:about N rounds would decide|N rounds?: an interval needs N)\)")

passed = failed = 0


def ok():
    global passed
    passed += 1


def bad(msg):
    global failed
    failed += 1
    print(f"FAIL: {msg}")


def warn(msg):
    print(f"warning: {msg}")


def sample_body(path):
    """A sample file's header (its '# command:' text) and its other lines."""
    lines = open(path, encoding="utf-8").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    command = lines[0][len("# command: "):] if lines and lines[0].startswith("# command: ") else None
    body = lines[2:] if command is not None and len(lines) > 1 and \
        lines[1].startswith("# sampled on: ") else lines
    return command, body


def doc_blocks(path):
    """(line, marker, lines) of each fenced block: marker is the sample's
    NAME, "" for a block marked as not a sample, None when unmarked."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i, out = 0, []
    while i < len(lines):
        if not lines[i].startswith("```"):
            m = MARK.match(lines[i])
            if m and (i + 1 >= len(lines) or not lines[i + 1].startswith("```")):
                bad(f"{path}:{i + 1}: <!-- sample: {m.group(1)} --> is not directly above a ``` block")
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        above = lines[i - 1] if i > 0 else ""
        m = MARK.match(above)
        marker = m.group(1) if m else "" if NOT_SAMPLE.match(above) else None
        out.append((i + 1, marker, lines[i + 1:j]))
        i = j + 1
    return out


def find_run(segment, body, start):
    """The first index >= start where segment's lines are body's, or -1."""
    seg = [s.rstrip() for s in segment]
    for k in range(start, len(body) - len(seg) + 1):
        if all(body[k + n].rstrip() == seg[n] for n in range(len(seg))):
            return k
    return -1


def block_matches(block, body):
    """Whether block is a run of body's lines, a '...' line standing for one
    or more of them."""
    segments = [[]]
    for line in block:
        if line.strip() == ELISION:
            segments.append([])
        else:
            segments[-1].append(line)
    pos = 0
    for n, seg in enumerate(segments):
        if n > 0:
            pos += 1  # the elision before this segment leaves out a line at least
        if seg:
            k = find_run(seg, body, pos)
            if k < 0:
                return False
            pos = k + len(seg)
    return pos <= len(body)


def check_blocks(docs):
    for doc in docs:
        for line, marker, block in doc_blocks(doc):
            if marker is None:
                if block and LOOKS_LIKE_OUTPUT.match(block[0]) and \
                        not doc.endswith("configuration.md"):
                    warn(f"{doc}:{line}: a block that looks like output is not marked "
                         "(<!-- sample: NAME --> or <!-- not a sample: WHY -->)")
                continue
            if marker == "":
                continue
            path = os.path.join(SAMPLES, marker)
            if not os.path.isfile(path):
                bad(f"{doc}:{line}: sample {marker}: no {path} (run {SCRIPT})")
                continue
            command, body = sample_body(path)
            shown = block
            if block and block[0].startswith("$ "):
                shown = block[1:]
                said = re.sub(r"^(\./)?dpbench\b", "dpbench", block[0][2:].strip())
                made = re.sub(r"^(\./)?dpbench\b", "dpbench", (command or "").strip())
                if said != made:
                    warn(f"{doc}:{line}: the block shows `{block[0][2:]}`, {marker} was made by "
                         f"`{command}`")
            if block_matches(shown, body):
                ok()
            else:
                bad(f"{doc}:{line}: the block marked {marker} is not a run of {path}'s lines "
                    f"(regenerate with {SCRIPT} and copy the lines again)")


def update_blocks(docs):
    """Copies the committed samples' lines into the marked blocks, after the
    samples were regenerated: each block line is replaced by the sample line
    that matches it with numbers masked (a run of lines, '...' kept). A block
    that matches no run so is left as it is, for the check to name."""
    for doc in docs:
        lines = open(doc, encoding="utf-8").read().split("\n")
        changed = False
        for line, marker, block in doc_blocks(doc):
            path = os.path.join(SAMPLES, marker or "")
            if not marker or not os.path.isfile(path):
                continue
            body = sample_body(path)[1]
            head = 1 if block and block[0].startswith("$ ") else 0
            new = update_block(block[head:], body)
            if new is not None and new != block[head:]:
                lines[line + head:line + len(block)] = new
                changed = True
        if changed:
            open(doc, "w", encoding="utf-8").write("\n".join(lines))
            print(f"updated {doc}")


def update_block(block, body):
    """block's lines taken from body by their masked form, or None."""
    # a JSON value that is null in one run and a number in the next (a load
    # figure), and a count's plural, do not make a line another one here
    loose = lambda l: re.sub(r"\bnull\b", "N", re.sub(r"\b(thread|epoch|round)s\b", r"\1", mask(l)))
    key = lambda l: next((p for p in VOLATILE if l.startswith(p)), None) or loose(l)
    keys = [key(l) for l in body]
    out, pos = [], 0
    segments = [[]]
    for l in block:
        if l.strip() == ELISION:
            segments.append([])
        else:
            segments[-1].append(l)
    for n, seg in enumerate(segments):
        if n > 0:
            out.append(ELISION)
            pos += 1
        want = [key(l) for l in seg]
        runs = [k for k in range(pos, len(body) - len(seg) + 1) if keys[k:k + len(seg)] == want]
        if not runs:
            return None
        # of the runs of that form, the one with the most lines as they were
        # (the last batch's lines, not the first's)
        k = max(runs, key=lambda k: (sum(body[k + i] == seg[i] for i in range(len(seg))), -k))
        out += body[k:k + len(seg)]
        pos = k + len(seg)
    return out


def mask(line):
    line = DATE.sub("D", line)
    line = HASH.sub("N", line)  # one placeholder: a hash may be all digits
    line = NUMBER.sub("N", line)
    line = CHOSEN.sub("W", line)
    line = UNDECIDED_NOTE.sub("", line)
    return " ".join(line.split())


def text_form(body):
    out = []
    for line in body:
        if OPTIONAL.match(line):
            continue
        label = next((p for p in VOLATILE if line.startswith(p)), None)
        if label and out and out[-1] == label:
            continue  # one '# blas:' line per distinct choice: their count is measured too
        out.append(label if label else mask(line))
    return out


def kind(v):
    if isinstance(v, bool):
        return "bool"
    return "number" if isinstance(v, (int, float)) else type(v).__name__


def json_diff(a, b, path, out):
    """Differences in keys and value types between two JSON values: null
    matches anything, an empty list any list, a list's items are merged."""
    if a is None or b is None:
        return
    if kind(a) != kind(b):
        out.append(f"{path or '/'}: {kind(a)} in the committed sample, {kind(b)} now")
    elif isinstance(a, dict):
        for k in sorted(set(a) ^ set(b)):
            out.append(f"{path}/{k}: {'gone' if k in a else 'new'}")
        for k in a:
            if k in b:
                json_diff(a[k], b[k], f"{path}/{k}", out)
    elif isinstance(a, list) and a and b:
        json_diff(merged(a), merged(b), path + "[]", out)


def merged(items):
    """One value standing for a list's items: objects with every key seen,
    lists of every item, else the first value that is not null."""
    items = [v for v in items if v is not None]
    if items and all(isinstance(v, dict) for v in items):
        keys = {}
        for v in items:
            for k, x in v.items():
                keys.setdefault(k, []).append(x)
        return {k: merged(xs) for k, xs in keys.items()}
    if items and all(isinstance(v, list) for v in items):
        flat = [x for v in items for x in v]
        return [merged(flat)] if flat else []
    return items[0] if items else None


def check_form(name, old_path, new_path):
    old_cmd, old = sample_body(old_path)
    new_cmd, new = sample_body(new_path)
    if old_cmd != new_cmd:
        bad(f"{name}: {SCRIPT} now runs `{new_cmd}`, the committed sample was made by "
            f"`{old_cmd}`: regenerate it")
        return
    try:
        a, b = json.loads("\n".join(old)), json.loads("\n".join(new))
    except ValueError:
        a = b = None
    if a is not None and b is not None:
        diffs = []
        json_diff(a, b, "", diffs)
        if diffs:
            bad(f"{name}: the JSON's form changed: {'; '.join(diffs[:8])} "
                f"(regenerate with {SCRIPT})")
        else:
            ok()
        return
    x, y = text_form(old), text_form(new)
    if x == y:
        ok()
        return
    k = next((k for k in range(min(len(x), len(y))) if x[k] != y[k]), min(len(x), len(y)))
    bad(f"{name}: the output's form changed at line {k + 1} of {len(x)} (numbers masked): "
        f"committed {x[k] if k < len(x) else '(none)'!r}, now {y[k] if k < len(y) else '(none)'!r} "
        f"(regenerate with {SCRIPT})")


def check_forms(binary):
    committed = sorted(os.listdir(SAMPLES)) if os.path.isdir(SAMPLES) else []
    with tempfile.TemporaryDirectory(prefix="dpbench-samples.") as tmp:
        try:
            r = subprocess.run(["bash", SCRIPT, binary, tmp], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=600)
        except subprocess.TimeoutExpired:
            bad(f"{SCRIPT} {binary} {tmp}: still running after 600 s")
            return
        if r.returncode != 0:
            bad(f"{SCRIPT} {binary} {tmp}: exit {r.returncode}: "
                f"{r.stdout.decode(errors='replace')[-2000:]}")
            return
        ok()
        made = sorted(os.listdir(tmp))
        for name in sorted(set(committed) - set(made)):
            bad(f"{SAMPLES}/{name}: committed, but {SCRIPT} no longer writes it")
        for name in sorted(set(made) - set(committed)):
            bad(f"{name}: {SCRIPT} writes it, but it is not committed in {SAMPLES}/")
        for name in sorted(set(made) & set(committed)):
            check_form(name, os.path.join(SAMPLES, name), os.path.join(tmp, name))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="./dpbench")
    ap.add_argument("--no-run", action="store_true", help=f"check the blocks only, not {SCRIPT}")
    ap.add_argument("--update-blocks", action="store_true",
                    help=f"first copy the lines of the samples in {SAMPLES} into the marked blocks")
    args = ap.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    docs = ["README.md"] + sorted(glob.glob("docs/*.md"))
    if args.update_blocks:
        update_blocks(docs)
    check_blocks(docs)
    if not args.no_run:
        check_forms(args.bin)
    print(f"samples: {passed} passed, {failed} failed")
    return 1 if failed else 0


sys.exit(main())
