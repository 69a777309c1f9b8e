# Shared by the shell tests (sourced after `cd` to the repository root): the
# pass/fail counters, and Debian's python3 rather than the first on PATH.
# Each test prints "N passed, N failed" at its end, the line CI reads.
python3() { "${PYTHON:-/usr/bin/python3}" "$@"; }
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
