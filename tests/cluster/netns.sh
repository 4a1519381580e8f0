#!/bin/sh
# netns.sh BUILD -- cluster mode across hosts: network namespaces stand for
# four machines, joined by veth pairs to a bridge in a fifth, with addresses
# of 192.0.2.0/24 (TEST-NET-1, never routed).  A master runs in one, a
# worker in each of two others, and the word count example (a shuffle
# between the two workers' executors, over their own addresses) runs as the
# driver in the fourth, authenticated and encrypted with a shared secret;
# its output must equal a local run's; so must the word count linked against
# libember.so (build/shared/wordcount), whose driver alone has the library on
# its LD_LIBRARY_PATH: the workers, started without one, get it from the
# driver.  Then tests/cluster/fault_driver runs
# its fault scenarios there, each answer compared with the same job on
# local[2]: spec (an executor stopped by SIGSTOP with speculation on, a
# second worker on the first host: the copy wins on the other host, the
# stopped executor is declared lost and killed by its worker), service (an
# executor SIGKILLed in the reduce stage: its worker serves its map outputs
# across hosts, no map task runs again), lost (the files of one host's map
# outputs deleted between two actions: one failed stage attempt reruns
# exactly those maps) and worker (a worker SIGKILLed, by its PID, in the
# reduce stage: only its host's map tasks run again, on the other worker).
# Everything it made (processes by PID, namespaces, files) is removed.
# Where namespaces cannot be made (no permission, no ip), it says it
# skipped and why, and counts as skipped (a failure in CI, which runs as
# root).  Its last line is "netns: N passed, N failed, N skipped".
set -u
B="$1"
tag="em$$"
T=$(mktemp -d /tmp/ember-netns-XXXXXX)
pids=""
made=""
cleanup() {
    for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
    sleep 0.3
    for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
    for n in $made; do ip netns del "$n" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT
# A skip is counted as one, said with its reason; in CI as root (where
# namespaces can be made) it is a failure instead.
skip() {
    echo "skip netns: $1"
    if [ "${CI:-}" = true ] && [ "$(id -u)" = 0 ]; then
        echo "FAIL netns: CI runs as root and can make namespaces: this skip is a failure there"
        echo "netns: 0 passed, 1 failed, 0 skipped"
        exit 1
    fi
    echo "netns: 0 passed, 0 failed, 1 skipped"
    exit 0
}

command -v ip > /dev/null 2>&1 || skip "no ip command (iproute2)"
ip netns add "$tag-br" 2> "$T/err" || skip "cannot create a network namespace: $(cat "$T/err")"
made="$tag-br"
ip -n "$tag-br" link add br0 type bridge 2> "$T/err" || skip "cannot create a bridge: $(cat "$T/err")"
ip -n "$tag-br" link set br0 up
i=1
for role in m w1 w2 d; do
    n="$tag-$role"
    ip netns add "$n" || skip "cannot create namespace $n"
    made="$made $n"
    ip link add "v$tag$i" netns "$n" type veth peer name "b$tag$i" netns "$tag-br" 2> "$T/err" ||
        skip "cannot create veth pairs: $(cat "$T/err")"
    ip -n "$n" addr add "192.0.2.$i/24" dev "v$tag$i"
    ip -n "$n" link set "v$tag$i" up
    ip -n "$n" link set lo up
    ip -n "$tag-br" link set "b$tag$i" master br0
    ip -n "$tag-br" link set "b$tag$i" up
    i=$((i + 1))
done

fail=0
npass=0
nfail=0
check() {
    if eval "$2"; then
        echo "ok   netns: $1"
        npass=$((npass + 1))
    else
        echo "FAIL netns: $1"
        fail=1
        nfail=$((nfail + 1))
    fi
}
head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$T/secret"
chmod 600 "$T/secret"
export EMBER_SECRET_FILE="$T/secret"
unset EMBER_MASTER EMBER_CONF || true

ip netns exec "$tag-m" "$B/bin/ember-master" --host 192.0.2.1 --port 7077 --webui-port 8080 \
    --conf ember.network.crypto.enabled=true > "$T/master.log" 2>&1 &
pids="$pids $!"
# worker NAME NAMESPACE ADDRESS CORES [--conf ...]: a worker in that
# namespace on its address, its PID in $wpid (and in $pids, for the
# cleanup).
worker() {
    n="$1" ns="$2" addr="$3" c="$4"
    shift 4
    ip netns exec "$tag-$ns" env -u LD_LIBRARY_PATH "$B/bin/ember-worker" --host "$addr" --cores "$c" --memory 1g --work-dir "$T/$n" \
        --conf ember.network.crypto.enabled=true "$@" ember://192.0.2.1:7077 > "$T/$n.log" 2>&1 &
    wpid=$!
    pids="$pids $wpid"
}
# gone PID: the process has ended (no longer there, or a zombie this shell
# has not reaped yet), waiting up to 10 s.
gone() {
    for k in $(seq 1 100); do
        [ -e "/proc/$1" ] || return 0
        [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2> /dev/null)" = Z ] && return 0
        sleep 0.1
    done
    return 1
}
# logged FILE PATTERN: a line of FILE matches, waiting up to 10 s (a
# daemon may log what it did after the driver that asked has finished).
logged() {
    for k in $(seq 1 100); do
        grep -q -- "$2" "$1" && return 0
        sleep 0.1
    done
    return 1
}
# registered N: N workers have registered with the master (up to 10 s).
registered() {
    for k in $(seq 1 100); do
        [ "$(grep -c 'worker .* registered from' "$T/master.log" 2>/dev/null)" -ge "$1" ] && break
        sleep 0.1
    done
}
worker w1 w1 192.0.2.2 2
wpids="$wpid"
worker w2 w2 192.0.2.3 1
wpids="$wpids $wpid"
registered 2
check "two workers in their namespaces registered with the master" \
    '[ "$(grep -c "registered from 192.0.2" "$T/master.log")" -eq 2 ]'

want=$("$B/examples/wordcount" tests/data/words.txt 5 'local[2]' | grep -v '^word ')
# The word count's tasks begin once both workers' executors (all 3 cores)
# have registered, so each runs some.
both="--conf ember.cores.max=3 --conf ember.scheduler.minRegisteredResourcesRatio=1"
got=$(ip netns exec "$tag-d" "$B/examples/wordcount" --conf ember.driver.host=192.0.2.4 \
      --conf ember.network.crypto.enabled=true --conf ember.local.dir="$T" --conf ember.executor.memory=512m $both \
      tests/data/words.txt 5 ember://192.0.2.1:7077 2> "$T/driver.err" | grep -v '^word ')
check "word count across the namespaces equals the local run" '[ -n "$got" ] && [ "$got" = "$want" ]'
[ "$got" = "$want" ] || { echo "  want: $want"; echo "  got:  $got"; cat "$T/driver.err" "$T/master.log" "$T"/w*.log; }
check "each worker ran an executor on its own address" \
    'logged "$T/w1.log" "started executor" && logged "$T/w2.log" "started executor"'
grep -q "started executor" "$T/w1.log" && grep -q "started executor" "$T/w2.log" ||
    cat "$T/driver.err" "$T/master.log" "$T"/w*.log

# Linked against libember.so: the workers have no LD_LIBRARY_PATH.
got=$(LD_LIBRARY_PATH="$B" ip netns exec "$tag-d" "$B/shared/wordcount" --conf ember.driver.host=192.0.2.4 \
      --conf ember.network.crypto.enabled=true --conf ember.local.dir="$T" --conf ember.executor.memory=512m $both \
      tests/data/words.txt 5 ember://192.0.2.1:7077 2> "$T/driver-shared.err" | grep -v '^word ')
check "word count linked against libember.so across the namespaces equals the local run" \
    '[ -n "$got" ] && [ "$got" = "$want" ]'
[ "$got" = "$want" ] || { echo "  want: $want"; echo "  got:  $got"; cat "$T/driver-shared.err" "$T"/w*.log; }
check "each worker fetched libember.so from the driver" \
    'logged "$T/w1.log" "fetched the application.s library" && logged "$T/w2.log" "fetched the application.s library"'

# The fault scenarios: the driver checks each itself (exit 0 and "ok");
# the fields checked here say what it proved.  The worker scenario comes
# last: it leaves one worker.
fault() {
    s="$1"
    shift
    ip netns exec "$tag-d" timeout 120 "$B/tests/cluster/fault_driver" --dir "$T" \
        --conf ember.driver.host=192.0.2.4 --conf ember.network.crypto.enabled=true \
        --conf ember.local.dir="$T" --conf ember.executor.memory=256m "$@" "$s" ember://192.0.2.1:7077 \
        > "$T/$s.out" 2> "$T/$s.err"
    echo $? > "$T/$s.rc"
    sed "s/^/  /" "$T/$s.out"
}
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$T/$1.out"; }
passed() { [ "$(cat "$T/$1.rc")" = 0 ] && [ "$(tail -n 1 "$T/$1.out")" = ok ]; }
show() { passed "$1" || cat "$T/$1.err" "$T/master.log" "$T"/w*.log; }

# spec: a second worker on the first host (its own work directory and
# shuffle service port), 2 cores each there, 1 on the other host.  The job's
# partition 0 goes to a first-host executor (the most free cores) and
# stops it, partition 1 to its neighbour; when the copy is placed, the
# neighbour has 2 free cores and the other host's executor 1, so only the
# preference for another host (scheduler/placement.c) sends it there.  The
# second worker is stopped (SIGTERM by its PID) after the scenario.
worker w1b w1 192.0.2.2 2 --conf ember.shuffle.service.port=7338
w1b=$wpid
registered 3
fault spec --executors 3
check "spec: a SIGSTOPped executor's task won by a speculative copy on the other host" \
    'passed spec && [ "$(field spec speculative_wins)" = 1 ] && [ "$(field spec stopped_gone)" = 1 ] &&
     [ "$(field spec stopped | cut -d/ -f1)" = 192.0.2.2 ] && [ "$(field spec winner)" = 192.0.2.3 ]'
show spec
kill -TERM "$w1b"
check "the first host's second worker stopped and was lost to the master" \
    'gone "$w1b" && logged "$T/master.log" "-$w1b lost"'

fault service
check "service: a SIGKILLed executor's map outputs served across hosts by its worker, no map rerun" \
    'passed service && [ "$(field service map_tasks)" = 6 ] && [ "$(field service crossed)" = 1 ]'
show service
# lost: the files of the first host's map outputs deleted between two
# actions (w1's shuffle service directory: its executors write there).
fault lost --lose "$T/w1/app-*/shuffle/shuffle_*"
check "lost: one host's deleted map outputs recomputed in one stage attempt, only those" \
    'passed lost && [ "$(field lost failed_stage_attempts)" = 1 ] &&
     [ "$(field lost rerun_maps)" = "$(field lost lost_outputs)" ]'
show lost
fault worker
kw=$(field worker killed_worker)
check "worker: a SIGKILLed worker (one of ours, gone) cost only its host's map tasks" \
    'passed worker && [ -n "$kw" ] && echo " $wpids " | grep -q " $kw " && gone "$kw" &&
     [ "$(field worker rerun_maps)" = "$(field worker lost_maps)" ]'
show worker
echo "netns: $npass passed, $nfail failed, 0 skipped"
exit $fail
