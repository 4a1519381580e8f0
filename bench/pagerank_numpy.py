#!/usr/bin/env python3
"""pagerank_numpy.py -- Spark's PageRank example's iterations in numpy on 1 core,
the peer bench/pagerank runs in the same run on the same edge list.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 python3 bench/pagerank_numpy.py FILE NODES ITERS

Reads FILE ("src dst" lines, decimal ids in [0, NODES)) with np.fromstring,
dedups the edges with np.unique on src * NODES + dst (sorted, so grouped by
source), takes out-degrees with bincount, then ITERS times: each source with
a rank gives rank / outdegree to each of its destinations, summed per
destination with np.bincount; a node that received nothing has no rank next
iteration (as a node absent from reduceByKey's output in Spark's example;
contributions are > 0, so "received" is "sum > 0"); ranks are
0.15 + 0.85 sum.  Absent ranks are held as 0.

Prints its times, then a line for bench/pagerank to read:
    numpy-figures LOAD INDEX ITERS_TIME TOTAL NODES_WITH_RANK RANK_SUM
"""
import sys
import time

import numpy as np


def main():
    path, nodes, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        data = f.read()
    e = np.fromstring(data, dtype=np.int64, sep=" ")
    del data
    if e.size % 2:
        sys.exit("pagerank_numpy: %s: odd number of ids" % path)
    t1 = time.perf_counter()
    key = np.unique(e[0::2] * nodes + e[1::2])
    del e
    src = key // nodes
    dst = key % nodes
    del key
    deg = np.bincount(src, minlength=nodes)
    inv = np.zeros(nodes)
    np.divide(1.0, deg, out=inv, where=deg > 0)
    r = (deg > 0).astype(np.float64)  # links.mapValues(1.0)
    t2 = time.perf_counter()
    for _ in range(iters):
        s = np.bincount(dst, weights=(r * inv)[src], minlength=nodes)
        r = np.where(s > 0, 0.15 + 0.85 * s, 0.0)
    t3 = time.perf_counter()
    print("  numpy %s: read and parse %.3f s, np.unique and index %.3f s, %d iterations %.3f s"
          % (np.__version__, t1 - t0, t2 - t1, iters, t3 - t2))
    print("numpy-figures %.6f %.6f %.6f %.6f %d %.9f"
          % (t1 - t0, t2 - t1, t3 - t2, t3 - t0, int(np.count_nonzero(r)), float(r.sum())))


if __name__ == "__main__":
    main()
