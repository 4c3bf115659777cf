#!/bin/bash
# paired rounds: base and branch at the same time, order of start alternating
# usage: rounds.sh 1 2 3   (then rounds.sh 4 5): the round numbers to run
OUT=/work/wt33/benchmarks/results/2026-12-02-issue19-loadtable
PY=/work/wt33/.venv/bin/python
for r in "$@"; do
  if [ $((r % 2)) = 1 ]; then first=/tmp/h33-base; second=/work/wt33; else first=/work/wt33; second=/tmp/h33-base; fi
  for root in $first $second; do
    name=$([ $root = /work/wt33 ] && echo branch || echo base)
    (cd $root && $PY benchmarks/instructions.py --modes fastpath,stream-path --sizes 128 --out $OUT/round$r-$name.json > $OUT/round$r-$name.txt 2>&1) &
    sleep 2
  done
  wait
done
