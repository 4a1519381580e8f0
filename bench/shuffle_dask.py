#!/usr/bin/python3
"""shuffle_dask.py -- the reference of bench/shuffle.c: the same reduce,
group, join and sort on Dask distributed, measured in the same run by
bench/run.sh.

    /usr/bin/python3 bench/shuffle_dask.py [NPAIRS [NKEYS [PARTITIONS]]]
                     (defaults: 20000000, 1000000, 8, as bench/shuffle.c)

A distributed.LocalCluster of 2 worker processes of 1 thread each and a
Client.  The input is a dask.dataframe of two int64 columns, k and v, made
inside the workers by one delayed numpy generator per partition
(dd.from_delayed), exactly the pairs bench/shuffle.c makes (the same
splitmix64 counters, the same partition bounds), persisted and waited for
(distributed.wait) before any timing.  The join's inputs are bench/shuffle.c's
too: left, the first NPAIRS/2 pairs of the reduce input (columns k, v);
right, NKEYS rows (j, 3j) (columns k, w).

Timed, 3 runs each, Dask's plain dataframe way:
    reduce_by_key  ddf.groupby('k').v.sum(), forced with len() (Dask's
                   default groupby aggregation: a tree reduction of the
                   per-partition pandas groupby sums, split_out=1);
    group_by_key   ddf.groupby('k').v.apply(list), forced with len():
                   Dask's way to gather every value of a key in one place,
                   as ember's group_by_key does (a hash shuffle of all the
                   rows, then a pandas groupby-apply per partition, which
                   makes one Python list per key).  A groupby().agg with a
                   custom list Aggregation would instead concatenate the
                   lists in one task of a tree reduction (split_out=1), so
                   every group would end in a single partition;
    join           dd.merge(left, right, on='k') (inner), forced with len():
                   both sides have PARTITIONS partitions and unknown
                   divisions, so Dask hash-shuffles both, as ember's join;
    sort_by_key    ddf.sort_values('k') -- the call itself computes the
                   quantiles that choose the partition boundaries, as
                   ember's sort_by_key samples its keys -- forced with len().
Prints best and median in the format of bench/shuffle.c, so that the lines
read side by side.  --split-out=N also times groupby(...).sum(split_out=N),
the hash-shuffled form, on a line of its own, labeled so.  The shuffle is
Dask's "tasks" method, the default under distributed: the "p2p" method of
this version needs pyarrow, which Debian does not package.

Checked after the timed runs (not timed), against the pairs regenerated in
the driver with numpy: the input's sum, the groupby result whole (its
length and every key's sum), the groups (their number, the total length
of their lists, every key's sum of its list), the join (its length, the
sums of v and of w, no row with w != 3k), and the sort (the total count,
each partition non-decreasing and not below the previous one, the first
key the smallest).  A mismatch exits 1.
"""
import sys
import time

import numpy as np
import pandas as pd

import dask
import dask.dataframe as dd
import distributed

RUNS = 3
SEED_REDUCE = 0x5EED
SEED_SORT = 0x50B7
GAMMA = np.uint64(0x9E3779B97F4A7C15)
C1 = np.uint64(0xBF58476D1CE4E5B9)
C2 = np.uint64(0x94D049BB133111EB)


def splitmix(seed, i):
    """splitmix64's finalizer of seed + (i + 1) * GAMMA, for a uint64 array i
    (array arithmetic wraps modulo 2^64, as C's)."""
    z = np.uint64(seed) + (i + np.uint64(1)) * GAMMA
    z = (z ^ (z >> np.uint64(30))) * C1
    z = (z ^ (z >> np.uint64(27))) * C2
    return z ^ (z >> np.uint64(31))


def part_start(npairs, parts, p):
    return npairs * p // parts


def gen(p, npairs, nkeys, parts, sort):
    """Partition p of the input: pairs [p*N/P, (p+1)*N/P) of bench/shuffle.c.
    sort: False (reduce, and the join's left side), True, or "right" (the
    join's right side: pair j is (j, 3j), in columns k and w)."""
    j = np.arange(part_start(npairs, parts, p), part_start(npairs, parts, p + 1), dtype=np.uint64)
    if sort == "right":
        k = j.astype(np.int64)
        return pd.DataFrame({"k": k, "w": 3 * k})
    seed = SEED_SORT if sort else SEED_REDUCE
    a = splitmix(seed, np.uint64(2) * j)
    b = splitmix(seed, np.uint64(2) * j + np.uint64(1))
    k = a.view(np.int64) if sort else (a % np.uint64(nkeys)).astype(np.int64)
    v = (b % np.uint64(100)).astype(np.int64) + 1
    return pd.DataFrame({"k": k, "v": v})


def make_input(client, npairs, nkeys, parts, sort):
    t0 = time.perf_counter()
    meta = gen(0, 0, nkeys, 1, sort)
    ddf = dd.from_delayed([dask.delayed(gen)(p, npairs, nkeys, parts, sort) for p in range(parts)], meta=meta)
    ddf = client.persist(ddf)
    distributed.wait(ddf)
    n = len(ddf)
    if n != npairs:
        sys.exit(f"shuffle_dask: generated {n} pairs, expected {npairs}")
    return ddf, time.perf_counter() - t0


def report(op, label, npairs, t):
    t = sorted(t)
    best, med = t[0], t[len(t) // 2]
    print(f"{op:<13} {label:<28} {npairs:9d} recs  best {best:7.3f} s {npairs / best / 1e6:7.2f} M rec/s"
          f"  median {med:7.3f} s {npairs / med / 1e6:7.2f} M rec/s", flush=True)


def same(d):
    return d


def fresh(ddf, tag):
    """ddf under new task keys: Dask names tasks by a hash of what they
    compute, so a run repeating the previous one's graph finds that run's
    last keys still in memory (their release is asynchronous) and returns
    at once (a 0.012 s groupby of 2M pairs was measured so).  An identity
    map_partitions with its own name gives every task downstream a new
    key; it costs one trivial call per partition, fused into the next."""
    return ddf.map_partitions(same, meta=ddf._meta, token=tag, enforce_metadata=False)


def part_order(d):
    k = d["k"]
    return pd.DataFrame({"n": [len(d)], "first": [k.iloc[0] if len(d) else 0],
                         "last": [k.iloc[-1] if len(d) else 0], "ok": [bool(k.is_monotonic_increasing)]})


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    split_out = 0
    for a in sys.argv[1:]:
        if a.startswith("--split-out="):
            split_out = int(a.split("=", 1)[1])
    npairs = int(args[0]) if len(args) > 0 else 20000000
    nkeys = int(args[1]) if len(args) > 1 else 1000000
    parts = int(args[2]) if len(args) > 2 else 8
    label = "dask LocalCluster(2x1)"
    bad = False

    # The driver's own view of the input.
    drv = pd.concat([gen(p, npairs, nkeys, parts, False) for p in range(parts)])
    key_sum = np.bincount(drv["k"].to_numpy(), weights=drv["v"].to_numpy(), minlength=nkeys).astype(np.int64)
    total = int(drv["v"].sum())
    distinct = int(np.count_nonzero(key_sum))
    nleft = npairs // 2  # the join's left side: the first half of these pairs
    left_sum = int(drv["v"].to_numpy()[:nleft].sum())
    right_sum = 3 * int(drv["k"].to_numpy()[:nleft].sum())
    del drv

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        print(f"shuffle on Dask {distributed.__version__} (pandas {pd.__version__}, numpy {np.__version__}), "
              f"LocalCluster of 2 worker processes x 1 thread: {npairs} pairs of (int64, int64), {nkeys} keys drawn "
              f"for reduce ({distinct} distinct), join {nleft} x {nkeys}, {parts} partitions, shuffle method "
              f"{dask.config.get('shuffle', None) or 'default (tasks)'}", flush=True)

        # ---- reduce: groupby-sum ----
        ddf, tgen = make_input(client, npairs, nkeys, parts, False)
        in_sum = int(ddf["v"].sum().compute())
        print(f"  reduce input generated and persisted in {tgen:.3f} s; sum of values {in_sum} (driver: {total})")
        bad |= in_sum != total

        def time_groupby(split_out=0):
            t = []
            for i in range(RUNS):
                t0 = time.perf_counter()
                d = fresh(ddf, f"groupby-{split_out}-run{i}")
                if split_out:
                    res = d.groupby("k", sort=False)["v"].sum(split_out=split_out)
                else:
                    res = d.groupby("k")["v"].sum()
                n = len(res)
                t.append(time.perf_counter() - t0)
            return t, res, n

        t, res, n = time_groupby()
        got = res.compute()
        wrong = int(np.count_nonzero(key_sum[got.index.to_numpy()] != got.to_numpy()))
        print(f"  groupby('k').v.sum(): {n} keys (driver: {distinct}), sum of sums {int(got.sum())}, "
              f"{wrong} keys with a wrong sum")
        bad |= n != distinct or len(got) != n or int(got.sum()) != total or wrong != 0
        del got, res
        report("reduce_by_key", label, npairs, t)
        if split_out:
            t, _, n = time_groupby(split_out=split_out)
            bad |= n != distinct
            report("reduce_by_key", f"dask split_out={split_out}", npairs, t)

        # ---- group: groupby-apply(list), over the same input ----
        t = []
        for i in range(RUNS):
            t0 = time.perf_counter()
            res = fresh(ddf, f"group-run{i}").groupby("k")["v"].apply(list, meta=("v", "object"))
            n = len(res)
            t.append(time.perf_counter() - t0)
        sums = res.map(sum, meta=("v", "i8"))
        lens = res.map(len, meta=("v", "i8"))
        got, items = dask.compute(sums, lens.sum())
        wrong = int(np.count_nonzero(key_sum[got.index.to_numpy()] != got.to_numpy()))
        print(f"  groupby('k').v.apply(list): {n} groups (driver: {distinct}), {int(items)} values "
              f"(driver: {npairs}), sum {int(got.sum())} (driver: {total}), {wrong} keys with a wrong sum")
        bad |= n != distinct or len(got) != n or int(items) != npairs or int(got.sum()) != total or wrong != 0
        del got, res, sums, lens
        report("group_by_key", label, npairs, t)
        client.cancel(ddf)
        del ddf

        # ---- join: merge ----
        left, tgen = make_input(client, nleft, nkeys, parts, False)
        right, tgen2 = make_input(client, nkeys, nkeys, parts, "right")
        print(f"  join inputs generated and persisted in {tgen:.3f} s and {tgen2:.3f} s")
        t = []
        for i in range(RUNS):
            t0 = time.perf_counter()
            j = dd.merge(fresh(left, f"join-left-run{i}"), fresh(right, f"join-right-run{i}"), on="k")
            n = len(j)
            t.append(time.perf_counter() - t0)
        sv, sw, wrong = dask.compute(j["v"].sum(), j["w"].sum(), (j["w"] != 3 * j["k"]).sum())
        print(f"  merge(on='k'): {n} records (driver: {nleft}), left values {int(sv)} (driver: {left_sum}), "
              f"right values {int(sw)} (driver: {right_sum}), {int(wrong)} wrong")
        bad |= n != nleft or int(sv) != left_sum or int(sw) != right_sum or int(wrong) != 0
        del j
        report("join", label, nleft + nkeys, t)
        client.cancel([left, right])
        del left, right

        # ---- sort: sort_values ----
        min_key = int(min(gen(p, npairs, nkeys, parts, True)["k"].min() for p in range(parts)))
        ddf, tgen = make_input(client, npairs, nkeys, parts, True)
        print(f"  sort input generated and persisted in {tgen:.3f} s")
        t = []
        for i in range(RUNS):
            t0 = time.perf_counter()
            s = fresh(ddf, f"sort-run{i}").sort_values("k")
            n = len(s)
            t.append(time.perf_counter() - t0)
        po = s.map_partitions(part_order, meta={"n": "i8", "first": "i8", "last": "i8", "ok": "bool"}).compute()
        total_n, parts_ok, prev, first = 0, 0, None, None
        for row in po.itertuples():
            total_n += row.n
            if row.n == 0:
                parts_ok += 1
                continue
            if first is None:
                first = row.first
            if row.ok and (prev is None or row.first >= prev):
                parts_ok += 1
            prev = row.last
        print(f"  sort_values('k'): {n} records, first key {first} (driver's smallest: {min_key}), "
              f"{parts_ok} of {len(po)} partitions ordered and in order")
        bad |= n != npairs or total_n != n or first != min_key or parts_ok != len(po)
        report("sort_by_key", label, npairs, t)
        client.cancel(ddf)

    if bad:
        sys.exit("shuffle_dask: MISMATCH (see the check lines above)")


if __name__ == "__main__":
    main()
