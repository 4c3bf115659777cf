#!/bin/bash
# Go peer with gctrace; one closed-loop run per concurrency; GC cycles and heap per run.
OUT=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$0")/../../../.."
for gogc in 100 1000; do
  for c in 100 1000; do
    GOGC=$gogc GODEBUG=gctrace=1 .build/peers/echo_server -port 0 < <(sleep 30) > $OUT/listening.$gogc.$c 2> $OUT/gctrace.$gogc.$c.txt &
    pid=$!
    sleep 0.5
    port=$(awk '/LISTENING/{print $2}' $OUT/listening.$gogc.$c)
    .venv/bin/python -m triple_py.bench run --target 127.0.0.1:$port -c $c -z 3s --warmup 0.5s --payload 128 > $OUT/run.$gogc.$c.txt 2>&1
    kill $pid; wait $pid 2>/dev/null; rm -f $OUT/listening.$gogc.$c
    calls=$(grep -m1 -o "[0-9,]* calls\|Count:.*" $OUT/run.$gogc.$c.txt)
    echo "GOGC=$gogc c=$c gcs=$(grep -c '^gc ' $OUT/gctrace.$gogc.$c.txt) $calls"
    grep '^gc ' $OUT/gctrace.$gogc.$c.txt | tail -n 2
  done
done
