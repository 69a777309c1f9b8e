# Helpers the bench-*.sh scripts share (sourced; they set PY first).

# now: the wall clock in seconds, with nanoseconds
now() { date +%s.%N; }
# median: the median of the numbers on stdin, one a line
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# built_at BIN: the commit BIN was built from, as its results record it (HEAD
# may have moved since)
built_at() { "$1" -q --set train.epochs=1 --set train.warmup_epochs=0 --set dataset.length=10 --format json |
    "$PY" -c 'import json,sys; print(json.load(sys.stdin)["dpbench"]["git_commit"])' 2>/dev/null || echo '?'; }
