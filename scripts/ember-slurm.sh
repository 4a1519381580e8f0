#!/bin/sh
# ember-slurm.sh -- run a driver program on an ember cluster made of the
# Slurm allocation it runs in (an sbatch script, or a shell of salloc):
#
#   ember-slurm.sh [ember-submit flags...] PROGRAM [ARGS...]
#
# The master runs on the allocation's first node and a worker on every node,
# each as a step of the job (srun, one task per node); a worker offers the
# node's cores of the allocation ($SLURM_CPUS_ON_NODE) and its memory
# ($SLURM_MEM_PER_NODE, else $SLURM_MEM_PER_CPU times the cores; without
# either, ember-worker's default).  Once every worker has registered, the
# program runs as ember-submit runs it, with --master ember://HOST:PORT and
# the flags given (a --master among them is dropped).  When the program
# ends, or the job is cancelled (scancel's SIGTERM), the daemons stop and
# the directories made for the job on every node go: the workers' work
# directories, the driver's scratch directory, the secret.  The exit status
# is the program's; 2 outside an allocation or for a usage error, 1 when
# the cluster does not come up.
#
# Every process of the job authenticates with a secret made for this
# allocation: a 0600 file in the job's directory, handed to each node's
# step on its standard input and kept there in a 0600 file too.  On one
# node the daemons and the driver bind 127.0.0.1; on several, each node's
# host name.
#
# Directories: ${TMPDIR:-/tmp}/ember-slurm-JOBID-*, one for the script and
# one for each daemon on its node.  The daemons' logs go there too, and so
# are removed with it, unless $EMBER_LOG_DIR names a directory to keep them
# in (ember-slurm-JOBID-master.out, ember-slurm-JOBID-workers.out).
# $EMBER_SLURM_WAIT (60) bounds, in seconds, the wait for the master and
# for the workers.  The binaries are found as ember-daemon.sh finds them:
# $EMBER_BIN_DIR, then bin/ and build/bin/ next to this script's directory.
#
# Run by a node's step as "ember-slurm.sh --node master|worker [MASTER]":
# that daemon, with the secret read from standard input.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
me="$here/$(basename "$0")"

die() {
    echo "ember-slurm.sh: $*" >&2
    exit 2
}

[ -n "${SLURM_JOB_ID:-}" ] ||
    die "not inside a Slurm allocation (no \$SLURM_JOB_ID): run it from an sbatch script, or in a shell of salloc"

bin=""
for d in "${EMBER_BIN_DIR:-}" "$here/../bin" "$here/../build/bin"; do
    if [ -n "$d" ] && [ -x "$d/ember-master" ] && [ -x "$d/ember-worker" ]; then bin="$d"; break; fi
done

# One daemon on this node, in a directory of its own that goes when it
# stops: SIGTERM, SIGINT or SIGHUP (srun forwards them, scancel sends
# SIGTERM) stops the daemon, and once it has ended the directory is removed.
node() {
    role="$1"
    [ -n "$bin" ] || { echo "ember-slurm.sh: ember-$role not found on $(hostname) (set EMBER_BIN_DIR, or build with make)" >&2; exit 1; }
    umask 077
    dir=$(mktemp -d "${TMPDIR:-/tmp}/ember-slurm-$SLURM_JOB_ID-$role-XXXXXX")
    pid=""
    stop() {
        [ -n "$pid" ] && kill -TERM "$pid" 2> /dev/null
    }
    trap stop TERM INT HUP
    echo "ember-slurm.sh: step $SLURM_JOB_ID.${SLURM_STEP_ID:-} on $(hostname): ember-$role in $dir" >&2
    IFS= read -r secret || true
    [ -n "$secret" ] || { rm -rf "$dir"; echo "ember-slurm.sh: no secret on standard input" >&2; exit 1; }
    printf '%s\n' "$secret" > "$dir/secret"
    EMBER_SECRET_FILE="$dir/secret"
    export EMBER_SECRET_FILE
    host="${EMBER_SLURM_BIND:-$(hostname)}"
    if [ "$role" = master ]; then
        "$bin/ember-master" --host "$host" --port 0 --webui-port 0 < /dev/null &
        pid=$!
    else
        cores="${SLURM_CPUS_ON_NODE:-$(nproc)}"
        set -- --host "$host" --cores "$cores" --work-dir "$dir/work" --webui-port 0 \
            --conf ember.shuffle.service.port=0 "$2"
        if [ -n "${SLURM_MEM_PER_NODE:-}" ]; then
            set -- --memory "$SLURM_MEM_PER_NODE" "$@"
        elif [ -n "${SLURM_MEM_PER_CPU:-}" ]; then
            set -- --memory "$((SLURM_MEM_PER_CPU * cores))" "$@"
        fi
        "$bin/ember-worker" "$@" < /dev/null &
        pid=$!
    fi
    # wait returns early when a trapped signal arrives: wait again until
    # the daemon has ended.
    rc=0
    while kill -0 "$pid" 2> /dev/null; do
        wait "$pid" && rc=0 || rc=$?
    done
    rm -rf "$dir"
    exit "$rc"
}
if [ "${1:-}" = --node ]; then
    set +e
    case "${2:-}" in
    master) node master ;;
    worker) [ $# -ge 3 ] || die "--node worker needs the master's URL"; node worker "$3" ;;
    *) die "--node master|worker" ;;
    esac
fi

# The flags are ember-submit's; a --master among them is dropped, the rest
# are kept in their order, PROGRAM and its arguments as given.
n=$#
i=0
program=""
while [ $i -lt $n ]; do
    a="$1"
    shift
    i=$((i + 1))
    if [ -n "$program" ]; then set -- "$@" "$a"; continue; fi
    case "$a" in
    -h|--help) sed -n '2,35p' "$me" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --master)
        [ $i -lt $n ] || die "--master needs a value"
        shift; i=$((i + 1)) ;;
    --name|--executor-cores|--executor-memory|--total-executor-cores|--conf|--properties-file)
        [ $i -lt $n ] || die "$a needs a value"
        b="$1"
        shift; i=$((i + 1))
        set -- "$@" "$a" "$b" ;;
    --) program=1; set -- "$@" "$a" ;;
    -*) die "unknown flag $a (see --help)" ;;
    *) program=1; set -- "$@" "$a" ;;
    esac
done
[ -n "$program" ] || die "usage: ember-slurm.sh [ember-submit flags...] PROGRAM [ARGS...]"
[ -n "$bin" ] || { echo "ember-slurm.sh: ember-master and ember-worker not found (set EMBER_BIN_DIR, or build with make)" >&2; exit 1; }
command -v srun > /dev/null 2>&1 || die "srun not found: Slurm's commands must be on PATH"
# ember-submit: next to this script in the source tree, in ../bin once
# installed.
submit="$here/ember-submit"
[ -x "$submit" ] || submit="$here/../bin/ember-submit"

nodes=$(scontrol show hostnames "${SLURM_JOB_NODELIST:-$SLURM_NODELIST}")
first=$(printf '%s\n' "$nodes" | head -n 1)
nnodes="${SLURM_JOB_NUM_NODES:-$(printf '%s\n' "$nodes" | wc -l)}"
# One node, and this script runs on it: everything on 127.0.0.1.
# Otherwise every process binds its own host name.
if [ "$nnodes" = 1 ] && [ "${SLURMD_NODENAME:-}" = "$first" ]; then
    EMBER_SLURM_BIND=127.0.0.1
    driver_host=127.0.0.1
else
    EMBER_SLURM_BIND=""
    driver_host=$(hostname)
fi
export EMBER_SLURM_BIND
wait_s="${EMBER_SLURM_WAIT:-60}"

umask 077
jobdir=$(mktemp -d "${TMPDIR:-/tmp}/ember-slurm-$SLURM_JOB_ID-XXXXXX")
logdir="${EMBER_LOG_DIR:-$jobdir}"
mkdir -p "$logdir"
mlog="$logdir/ember-slurm-$SLURM_JOB_ID-master.out"
wlog="$logdir/ember-slurm-$SLURM_JOB_ID-workers.out"
mpid=""
wpid=""
dpid=""

# step LOG: the step whose tasks write to LOG (each says which first).
step() {
    sed -n 's/^ember-slurm\.sh: step \([0-9][0-9.]*\) on .*/\1/p' "$1" 2> /dev/null | head -n 1
}

# Stops the driver and the daemons' steps, waits for them up to 20 s, then
# removes the job's directory here.  A step is sent SIGTERM with scancel:
# every process of it gets it, and each node's task stops its daemon and
# removes its directory.  (srun given SIGTERM kills its step with SIGKILL,
# which leaves the directories: that is the fallback only.)  When the job
# is cancelled, Slurm sends SIGTERM to every step itself and waits
# KillWait before SIGKILL.
cleanup() {
    trap - EXIT INT TERM HUP
    set +e
    [ -n "$dpid" ] && kill -TERM "$dpid" 2> /dev/null
    for f in "$wlog" "$mlog"; do
        s=$(step "$f")
        [ -n "$s" ] && scancel --signal=TERM "$s" 2> /dev/null
    done
    k=0
    for p in $dpid $wpid $mpid; do
        while kill -0 "$p" 2> /dev/null && [ $k -lt 200 ]; do sleep 0.1; k=$((k + 1)); done
        kill -TERM "$p" 2> /dev/null && sleep 1
        kill -KILL "$p" 2> /dev/null
        wait "$p" 2> /dev/null
    done
    rm -rf "$jobdir"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

# fail MESSAGE: the cluster did not come up; the daemons' last log lines.
fail() {
    echo "ember-slurm.sh: $*" >&2
    for f in "$mlog" "$wlog"; do
        [ -s "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
    done
    exit 1
}

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$jobdir/secret"
chmod 600 "$jobdir/secret"

srun --overlap --nodes=1 --ntasks=1 --nodelist="$first" --kill-on-bad-exit=0 \
    "$me" --node master < "$jobdir/secret" > "$mlog" 2>&1 &
mpid=$!
url=""
k=0
while [ $k -lt $((wait_s * 10)) ]; do
    url=$(sed -n 's/.*listening on \([^ ,]*:[0-9]*\), status on.*/ember:\/\/\1/p' "$mlog" | head -n 1)
    [ -n "$url" ] && break
    kill -0 "$mpid" 2> /dev/null || fail "the master's step ended before the master listened"
    sleep 0.1
    k=$((k + 1))
done
[ -n "$url" ] || fail "the master did not listen within $wait_s s"

srun --overlap --nodes="$nnodes" --ntasks="$nnodes" --ntasks-per-node=1 --input=all --kill-on-bad-exit=0 \
    "$me" --node worker "$url" < "$jobdir/secret" > "$wlog" 2>&1 &
wpid=$!
k=0
while [ "$(grep -c 'worker .* registered from' "$mlog")" -lt "$nnodes" ]; do
    kill -0 "$wpid" 2> /dev/null || fail "the workers' step ended before $nnodes workers registered"
    [ $k -lt $((wait_s * 10)) ] || fail "$nnodes workers did not register within $wait_s s"
    sleep 0.1
    k=$((k + 1))
done
echo "ember-slurm.sh: master $url, $nnodes workers registered (job $SLURM_JOB_ID)" >&2

EMBER_SECRET_FILE="$jobdir/secret"
export EMBER_SECRET_FILE
# The program keeps the script's standard input (a background command's
# would be /dev/null).
exec 3<&0
"$submit" --master "$url" --conf ember.driver.host="$driver_host" \
    --conf ember.local.dir="$jobdir" "$@" <&3 3<&- &
dpid=$!
# wait returns early when a trapped signal arrives; the trap exits.
wait "$dpid" && rc=0 || rc=$?
dpid=""
exit "$rc"
