#!/bin/bash
# Idle wake-ups per second of a daemon on an empty vault (docs/benchmarks.md): context switches of
# every thread of the daemon and its courier over 30 s, after 5 s of settling. Usage:
#   bash scripts/idle-wakeups.sh [path/to/tokenvault]
# DATA=dir serves that vault instead of an empty one (for example a million credentials seeded
# with `tokenvault-loadgen seed --data-dir dir --count 1000000`, none due within the minute).
BIN=${1:-.build/debug/tokenvault}
D=$(mktemp -d)
if [ -n "${DATA:-}" ]; then
  ln -s "$(realpath "$DATA")" $D/data
else
  $BIN init --data-dir $D/data >/dev/null 2>&1
fi
$BIN serve --data-dir $D/data --socket $D/s.sock >$D/log 2>&1 &
PID=$!
sleep 5
# One line per thread: pid/tid, name, context switches so far.
perthread() {
  for p in $PID $(pgrep -P $PID); do
    for t in /proc/$p/task/*; do
      # A thread may end while it is read: its line is then left out.
      comm=$( (tr ' ' '_' <$t/comm) 2>/dev/null) || continue
      echo "$p/${t##*/} $comm $(awk '/ctxt_switches/ {s += $2} END {print s}' $t/status 2>/dev/null)"
    done
  done
}
perthread > $D/a
sleep 30
perthread > $D/b
# By thread, matched by id (a thread that started during the 30 s counts from zero; the
# switches of one that ended in them are missed), then the sum.
awk 'NR == FNR { before[$1] = $3; next } { d = $3 - before[$1]; if (d > 0) printf "%.2f %s\n", d / 30, $2 }' \
  $D/a $D/b | sort -rn >$D/threads
echo "wake-ups/s: $(awk '{ s += $1 } END { printf "%.1f", s }' $D/threads)"
head -8 $D/threads
kill $PID; sleep 1; rm -rf $D  # the link only, never DATA itself
