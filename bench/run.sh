#!/bin/sh
# Run the benchmarks: builds them, generates the word file once (bench/data/,
# not committed), and prints each figure beside its reference.
# Usage: bench/run.sh [MEGABYTES]   (default 256)
set -e
cd "$(dirname "$0")/.."
MB=${1:-256}
make -s benches examples
mkdir -p bench/data
F=bench/data/words-$MB.txt
[ -f "$F" ] || build/bench/gen_words "$F" "$MB"
echo "== word count (local[2] vs single-threaded C hash count, same run)"
build/bench/wordcount "$F" local[2] 3
echo "== scheduling"
build/bench/tasks local[2] 1000
echo "== cluster mode: local-cluster[2,1] (a master, 2 workers, 2 executor processes over TCP) beside local[2]"
build/bench/wordcount "$F" 'local-cluster[2,1]' 3
build/bench/tasks 'local-cluster[2,1]' 1000
build/bench/cluster_start
echo "== logistic regression (10k x 10k, 1M x 100 dense, sparse; C loop and memory bound, same run)"
build/bench/logreg
echo "== LIBSVM load (2000 x 10000 dense as LIBSVM, 288 MB; C strtod loop same run, scikit-learn quoted)"
build/bench/libsvm_load
if command -v hyperfine >/dev/null 2>&1; then
  # Whole commands, with the shell pipeline as the peer.
  S=bench/data/words-64.txt
  [ -f "$S" ] || build/bench/gen_words "$S" 64
  echo "== whole commands on 64 MB (hyperfine)"
  hyperfine --warmup 1 --runs 3 \
    "EMBER_MASTER='local[2]' build/examples/wordcount $S 10" \
    "tr -s ' ' '\\n' < $S | sort | uniq -c | sort -rn | head -10"
fi
