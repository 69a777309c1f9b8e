#!/usr/bin/env bash
# dpbench itself built with AddressSanitizer and UBSan (build/asan/dpbench,
# the CPU build) over the corpora of the other stages: tests/cli_test.sh and
# tests/data_cli_test.sh run whole against it, then every config of the fuzz
# corpus (build/fuzz-corpus, which make test-fuzz grows; configs/ without it)
# is read, checked and refused at the memory estimate. A sanitizer report in
# any run fails the stage, whatever that run's test made of it: reports go to
# log files, which must stay empty. Prints "N passed, N failed" per part.
set -u
BIN=$(realpath "$1")
cd "$(dirname "$0")/.."
. tests/lib.sh
LOGS=$(mktemp -d)
WORK=$(mktemp -d)
trap 'rm -rf "$LOGS" "$WORK"' EXIT
# leaks too: every exit path frees what it allocated
export ASAN_OPTIONS="log_path=$LOGS/asan:detect_leaks=1:handle_abort=1"
export UBSAN_OPTIONS="log_path=$LOGS/ubsan:print_stacktrace=1:halt_on_error=1"
export DPBENCH_TEST_SANITIZER=asan # what the tests cannot ask of it: its RSS

# the corpora of two stages, their tests as they are, against this binary;
# side by side (they are made to pass on a loaded machine), then their output
tests/cli_test.sh "$BIN" >"$WORK/cli.out" 2>&1 &
tests/data_cli_test.sh "$BIN" >"$WORK/data-cli.out" 2>&1
wait
sed 's/^cli: /asan-cli: /' "$WORK/cli.out"
sed 's/^data-cli: /asan-data-cli: /' "$WORK/data-cli.out"

# the fuzz corpus: every file as a config, with what it could reach outside
# this run (paths it names, a results folder) emptied; a config the reader
# takes ends at the memory estimate (--max-memory 1), one it refuses at once
corpus=build/fuzz-corpus
[ -d "$corpus" ] || corpus=configs
n=0
for f in "$corpus"/*; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    (cd "$WORK" && timeout -s KILL 60 "$BIN" -c "$OLDPWD/$f" --set dataset.path= --set dataset.eval_path= \
        --set emulate.profile= --set report.out= --max-memory 1 >/dev/null 2>"$WORK/err" </dev/null)
    rc=$?
    # 0: a config whose point needs nothing (cannot be: --max-memory 1); 2: refused
    if [ $rc -eq 2 ] && [ "$(wc -l <"$WORK/err")" -eq 1 ]; then ok
    else bad "fuzz corpus $f: exit $rc: $(head -c 300 "$WORK/err")"; fi
done
echo "# the fuzz corpus: $n files of $corpus"
echo "asan-fuzz-corpus: $pass passed, $fail failed"

# every report any run wrote
reports=$(find "$LOGS" -type f | head -20)
if [ -z "$reports" ]; then echo "asan-reports: 1 passed, 0 failed"
else
    for r in $reports; do echo "FAIL: sanitizer report $r:"; head -40 "$r"; done
    echo "asan-reports: 0 passed, 1 failed"
fi
[ -z "$reports" ]
