#!/bin/sh
# Run the benchmarks: builds them, generates the 256 MB word file once
# (bench/data/, not committed), and prints each figure beside its reference.
# Usage: bench/run.sh [MEGABYTES]   (default 256)
set -e
cd "$(dirname "$0")/.."
MB=${1:-256}
make -s benches
mkdir -p bench/data
F=bench/data/words-$MB.txt
[ -f "$F" ] || build/bench/gen_words "$F" "$MB"
echo "== word count (local[2] vs single-threaded C hash count)"
build/bench/wordcount "$F" local[2] 3
echo "== scheduling"
build/bench/tasks local[2] 1000
