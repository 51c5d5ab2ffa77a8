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
count() {
  local total=0
  for p in $PID $(pgrep -P $PID); do
    for t in /proc/$p/task/*; do
      v=$(awk '/^voluntary_ctxt_switches/ {print $2}' $t/status 2>/dev/null); n=$(awk '/^nonvoluntary_ctxt_switches/ {print $2}' $t/status 2>/dev/null)
      total=$((total + ${v:-0} + ${n:-0}))
    done
  done
  echo $total
}
perthread() {
  for p in $PID $(pgrep -P $PID); do
    for t in /proc/$p/task/*; do
      echo "$(cat $t/comm) $(awk '/^voluntary_ctxt_switches/ {print $2}' $t/status)"
    done
  done
}
perthread > $D/a
A=$(count); sleep 30; B=$(count)
perthread > $D/b
echo "wake-ups/s: $(( (B - A) / 30 ))"
paste $D/a $D/b | awk '{d=$4-$2; if (d>0) print d/30, $1}' | sort -rn | head -8
kill $PID; sleep 1; rm -rf $D  # the link only, never DATA itself
