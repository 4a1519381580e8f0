#!/bin/sh
# run.sh -- run the benchmarks: builds them (and the C references they run,
# such as build/bench/wc_limit), generates the word file once (bench/data/,
# not committed), and prints each figure beside its reference.
# Usage: bench/run.sh [MEGABYTES]   (default 256)
# Optional peers: Dask (python3-distributed, python3-pandas) for the shuffle;
# numpy (python3-numpy: scripts/install-deps.sh bench) for PageRank, which
# prints that numpy is absent and runs on without it.
set -e
cd "$(dirname "$0")/.."
MB=${1:-256}
make -s benches examples daemons
mkdir -p bench/data
F=bench/data/words-$MB.txt
[ -f "$F" ] || build/bench/gen_words "$F" "$MB"
echo "== word count: ember with em_sum_i64 and with a user's own sum function, beside wc_limit (bench/ref/wc_limit.c, 1 thread), same run"
build/bench/wordcount "$F" local[2] 3
echo "== scheduling"
build/bench/tasks local[2] 1000
echo "== small shuffles: tree_aggregate over 64 cached partitions (local[2], local[4]) beside the same tasks with no shuffle"
build/bench/treeagg local[2] 2000
build/bench/treeagg local[4] 2000
echo "== cluster mode: local-cluster[2,1] (a master, 2 workers, 2 executor processes over TCP) beside local[2]"
build/bench/wordcount "$F" 'local-cluster[2,1]' 3
build/bench/tasks 'local-cluster[2,1]' 1000
build/bench/cluster_start
echo "== fault tolerance on local-cluster[3,1]: one executor SIGKILLed mid-job, one straggling task with and without speculation"
build/bench/faults 2>/dev/null
echo "== logistic regression, 10k x 10k and 100k x 100, from dense binary, CSV and LIBSVM files and synthetic"
echo "   (fused C loop, 2 threads, -O3 -march=native, and the STREAM-like read bound, same run, same numbers)"
build/bench/logreg
echo "== LIBSVM load of the 10k x 10k set written by bench/logreg (C strtod loop same run, scikit-learn quoted)"
build/bench/libsvm_load --file bench/data/lr-10000x10000.svm
echo "== shuffle: reduce_by_key, group_by_key, distinct, join (10M x 1M) and sort_by_key, 20M pairs"
# ember on local-cluster[2,1] and local[2], each op beside its references
# (C hash aggregation, C radix sort, C radix-sort dedup, memory-read bound), then the same work
# on Dask distributed (a LocalCluster of 2 single-thread worker processes,
# dataframe groupby-sum, groupby-apply(list), merge and sort_values);
# ratio = Dask's best time / ember's best time.
build/bench/shuffle 'local-cluster[2,1]' > bench/data/shuffle-ember.txt
build/bench/shuffle 'local[2]' >> bench/data/shuffle-ember.txt
cat bench/data/shuffle-ember.txt
if /usr/bin/python3 -c 'import distributed, pandas' 2>/dev/null; then
  /usr/bin/python3 bench/shuffle_dask.py > bench/data/shuffle-dask.txt
  cat bench/data/shuffle-dask.txt
  # On local-cluster, where map outputs are lz4 files, the time 10x Dask
  # allows is printed beside the "lz4 alone" reference of the same op (the
  # codec's own cost on 2 threads).
  awk '$1 == "reduce_by_key" || $1 == "group_by_key" || $1 == "join" || $1 == "sort_by_key" {
         for (i = 1; i <= NF; i++) if ($i == "best") t = $(i + 1)
         if ($2 == "dask") dask[$1] = t
         else if ($2 == "ember") { n++; op[n] = $1; who[n] = $3; sec[n] = t }
       }
       $1 == "reference:" && $2 == "lz4" && n > 0 {
         for (i = 3; i <= NF; i++) if ($i == "s") { lz4[n] = $(i - 1); break }
       }
       END { for (i = 1; i <= n; i++) if (dask[op[i]] > 0) {
               printf "%-13s ember %-18s : %6.2fx Dask (best %.3f s, Dask %.3f s; target 10x)\n",
                      op[i], who[i], dask[op[i]] / sec[i], sec[i], dask[op[i]]
               if (who[i] ~ /cluster/ && lz4[i] > 0)
                 printf "%-13s   10x Dask allows %.3f s; lz4 alone on the records takes %.3f s of it (%.0f%%)\n",
                        "", dask[op[i]] / 10, lz4[i], 1000 * lz4[i] / dask[op[i]]
             } }' \
    bench/data/shuffle-ember.txt bench/data/shuffle-dask.txt
else
  echo "Dask skipped: /usr/bin/python3 cannot import distributed and pandas;" \
       "install them with: sudo apt-get install -y python3-distributed python3-pandas"
fi
if command -v hyperfine >/dev/null 2>&1; then
  # Whole commands, with the shell pipeline as the peer.
  S=bench/data/words-64.txt
  [ -f "$S" ] || build/bench/gen_words "$S" 64
  echo "== whole commands on 64 MB (hyperfine)"
  hyperfine --warmup 1 --runs 3 \
    "EMBER_MASTER='local[2]' build/examples/wordcount $S 10" \
    "tr -s ' ' '\\n' < $S | sort | uniq -c | sort -rn | head -10"
fi
echo "== first touch: what memory new to the process costs, 4 KiB and huge pages, after a 10 s pause and at once"
build/bench/firsttouch 256 10
echo "== PageRank (Spark's example: distinct, group_by_key, persisted links; 10 x join, flat_map, reduce_by_key, map_values)"
echo "   on a skewed graph of 1M nodes and 8M edges, beside numpy on 1 core and a C loop over arrays (same run, same file)"
build/bench/pagerank 'local[2]' | tee bench/data/pagerank-ember.txt
build/bench/pagerank 'local-cluster[2,1]' | tee -a bench/data/pagerank-ember.txt
awk '$1 == "ember" && $3 == ":" && $4 == "total" { t[$2] = $5 }
     END { if (t["local[2]"] > 0 && t["local-cluster[2,1]"] > 0)
             printf "PageRank local-cluster[2,1] / local[2]: %.2fx (%.3f s, %.3f s; target 0.8x)\n",
                    t["local[2]"] / t["local-cluster[2,1]"], t["local-cluster[2,1]"], t["local[2]"] }' \
  bench/data/pagerank-ember.txt
echo "== parallelize: 20M (int64, int64) pairs loaded into a cached RDD, beside a memcpy of the same bytes"
build/bench/parallelize 'local[2]'
build/bench/parallelize 'local-cluster[2,1]'
echo "== history server: loading a generated 100,000-task event log (~1 GB, Spark 3.5's format), plain and zstd, beside wc -l and zstd -d on the same file"
build/bench/history 100000 3
