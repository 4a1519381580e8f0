#!/bin/sh
# eventlog_cost.sh -- what writing the event log costs the shuffle and word
# count benchmarks.  The same build runs each workload with the event log off
# (the reference) and on (ember.eventLog.enabled=true, zstd-compressed when
# COMPRESS=1), in turn, ROUNDS times, so a drift of the machine's speed
# touches both; it prints each pair's figures and the median ratio on/off.
#
#   bench/eventlog_cost.sh [ROUNDS] [MASTER]     (default 5, local[2])
#
# Workloads: build/bench/wordcount on bench/data/words-256.txt (its
# em_sum_i64 job's MB/s, best of 3 in each run), build/bench/shuffle's reduce_by_key with a user function
# and with em_sum_i64, and sort_by_key (best seconds of each run).  Needs bench/run.sh's word file and `make benches`.
set -e
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
MASTER=${2:-local[2]}
F=bench/data/words-256.txt
[ -f "$F" ] || build/bench/gen_words "$F" 256
LOGDIR=$(mktemp -d /tmp/ember-evlog-cost.XXXXXX)
trap 'rm -rf "$LOGDIR"' EXIT INT TERM
ON="ember.eventLog.enabled=true
ember.eventLog.dir=$LOGDIR"
[ "${COMPRESS:-0}" = 1 ] && ON="$ON
ember.eventLog.compress=true"

# One run of a workload, its figures on one line: MB/s, or the seconds of
# reduce_fn, reduce_by_key and sort_by_key.
run() { # $1 workload, $2 "on" or "off"
    if [ "$2" = on ]; then conf=$ON; else conf=; fi
    case $1 in
    wordcount)
        EMBER_CONF=$conf build/bench/wordcount "$F" "$MASTER" 3 |
            awk '/^wordcount ember .*\(builtin sum\)/{ for (i = 1; i <= NF; i++) if ($i == "MB/s") print $(i - 1) }' ;;
    shuffle)
        EMBER_CONF=$conf SHUFFLE_JOBS=reduce,sort build/bench/shuffle "$MASTER" |
            awk '$2 == "ember" { for (i = 1; i <= NF; i++) if ($i == "best") t[$1] = $(i + 1) }
                 END { print t["reduce_fn"], t["reduce_by_key"], t["sort_by_key"] }' ;;
    esac
    rm -rf "${LOGDIR:?}"/*
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "event log cost on $MASTER, $ROUNDS rounds, off and on in turn (compress=${COMPRESS:-0})"
: >"$LOGDIR/.wc"; : >"$LOGDIR/.fn"; : >"$LOGDIR/.rbk"; : >"$LOGDIR/.sort"
for r in $(seq "$ROUNDS"); do
    a=$(run wordcount off); b=$(run wordcount on)
    echo "  round $r  word count  off $a MB/s   on $b MB/s"
    echo "$a $b" | awk '{ print $1 / $2 }' >>"$LOGDIR/.wc"   # time on / time off
    a=$(run shuffle off); b=$(run shuffle on)
    set -- $a $b
    echo "  round $r  reduce, user function  off $1 s  on $4 s    reduce_by_key  off $2 s  on $5 s    sort_by_key  off $3 s  on $6 s"
    echo "$4 $1" | awk '{ print $1 / $2 }' >>"$LOGDIR/.fn"
    echo "$5 $2" | awk '{ print $1 / $2 }' >>"$LOGDIR/.rbk"
    echo "$6 $3" | awk '{ print $1 / $2 }' >>"$LOGDIR/.sort"
done
printf "median time on/off: word count %.3f   reduce, user function %.3f   reduce_by_key %.3f   sort_by_key %.3f   (target at most 1.05)\n" \
    "$(median <"$LOGDIR/.wc")" "$(median <"$LOGDIR/.fn")" "$(median <"$LOGDIR/.rbk")" "$(median <"$LOGDIR/.sort")"
