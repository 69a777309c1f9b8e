#!/usr/bin/env bash
# The documentation against the code: docs/configuration.md is what
# scripts/gen-config-doc.sh makes of `dpbench --help-config` (regenerate it
# when a key changes), README.md stays a page a newcomer reads first (at most
# 350 lines, the two commands in it), and every relative link in README.md and
# docs/ names a file that exists. Prints "N passed, N failed".
. "$(dirname "$0")/lib.sh"
test_init "$@"

if scripts/gen-config-doc.sh "$BIN" >"$TMP/configuration.md" &&
    diff -u docs/configuration.md "$TMP/configuration.md" >"$TMP/diff"; then ok
else bad "docs/configuration.md differs from dpbench --help-config (run scripts/gen-config-doc.sh ./dpbench >docs/configuration.md): $(head -20 "$TMP/diff")"; fi

n=$(wc -l <README.md)
if [ "$n" -le 350 ] && grep -q '^make run' README.md && grep -q '^make test' README.md; then ok
else bad "README.md: $n lines (at most 350), and 'make run' / 'make test' at a line's start"; fi

# [text](target) links that are not URLs or anchors, relative to their file
missing=""
for f in README.md docs/*.md; do
    for t in $(grep -o '\]([^)#]*\(#[^)]*\)\?)' "$f" | sed 's/^](//; s/)$//; s/#.*//' | grep -v '^[a-z]*:' | sort -u); do
        [ -n "$t" ] && [ ! -e "$(dirname "$f")/$t" ] && missing+=" $f->$t"
    done
done
if [ -z "$missing" ]; then ok; else bad "links to missing files:$missing"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
