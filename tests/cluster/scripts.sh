#!/bin/sh
# scripts.sh BUILD -- the operator scripts and ember-submit, for real: a
# master and a worker started with scripts/start-*.sh (PID files and logs in
# a temporary EMBER_PID_DIR and EMBER_LOG_DIR), the word count example run
# on them with ember-submit and compared with a local run, the history
# server started and stopped by its scripts over the event log of a
# submitted run, a PID file naming a process that is not ours left alone by
# the stop script, then
# a second worker on the host as EMBER_WORKER_INSTANCE=2 (its own shuffle
# service and web UI ports, --memory 1024 as MiB; the first's --webui-port
# passed through), ember-submit's messages for a
# missing master and a bad --executor-memory.  Drivers linked against
# libember.so run on a worker started without LD_LIBRARY_PATH: word count
# (build/shared/), and needlib, whose own library the worker cannot load,
# failing at its first executor launch.  Then stop-worker.sh and
# stop-master.sh, after which no process they started runs, no PID file is
# left, nor the worker's copy of the secret, and no stopping worker tried to
# register again.  Every address is the name "localhost"; every process has
# a shared secret.
# Run by `make test`.
set -eu
B="$1"
T=$(mktemp -d /tmp/ember-scripts-XXXXXX)
export EMBER_PID_DIR="$T/pids" EMBER_LOG_DIR="$T/logs" EMBER_BIN_DIR="$B/bin"
unset EMBER_MASTER EMBER_CONF EMBER_WORKER_INSTANCE || true
fail=0
spid=""
cleanup() {
    # Whatever a failed check left: by PID only.
    for f in "$T"/pids/*.pid; do
        [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null || true
    done
    [ -n "$spid" ] && kill -KILL "$spid" 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT
npass=0
nfail=0
check() {
    if eval "$2"; then
        echo "ok   scripts: $1"
        npass=$((npass + 1))
    else
        echo "FAIL scripts: $1"
        fail=1
        nfail=$((nfail + 1))
    fi
}

# A shared secret for every process (its file readable by its owner only:
# ember refuses another); the worker's copy for its executors goes when it
# stops.
head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$T/secret"
chmod 600 "$T/secret"
export EMBER_SECRET_FILE="$T/secret"

# Every address by name: the daemons bind "localhost", the driver
# advertises it, and the master URL names it.
out=$(scripts/start-master.sh --host localhost --port 0 --webui-port 0)
url=$(printf '%s\n' "$out" | sed -n 's/.*listening on [a-z0-9.]*:\([0-9]*\),.*/ember:\/\/localhost:\1/p')
check "start-master.sh reports where the master listens" '[ -n "$url" ]'
mpid=$(cat "$T"/pids/ember-*-master-1.pid)
scripts/start-worker.sh "$url" --host localhost --cores 1 --memory 512m --work-dir "$T/work" --webui-port 0 > "$T/worker.out"
wpid=$(cat "$T"/pids/ember-*-worker-1.pid)
check "start-worker.sh: the worker registered" 'grep -q "registered with" "$T/worker.out"'
wui=$(sed -n 's/.*web UI on http:\/\/localhost:\([0-9]*\)$/\1/p' "$T"/logs/ember-*-worker-1.out)
check "start-worker.sh passes --webui-port through (0: any free port, $wui)" '[ -n "$wui" ] && [ "$wui" != 8081 ]'

want=$("$B/examples/wordcount" tests/data/words.txt 3 'local[2]' | grep -v '^word ')
got=$(scripts/ember-submit --master "$url" --name wc --executor-memory 512m --conf ember.local.dir="$T" --conf ember.driver.host=localhost \
      "$B/examples/wordcount" tests/data/words.txt 3 2> "$T/submit.err" | grep -v '^word ' || true)
check "ember-submit runs word count on the cluster" '[ -n "$got" ] && [ "$got" = "$want" ]'
[ "$got" = "$want" ] || { echo "  want: $want"; echo "  got:  $got"; cat "$T/submit.err"; }
check "the application's executor ran on the worker" 'grep -q "started executor" "$T"/logs/ember-*-worker-1.out'

# The history server from its scripts, over the event log of a word count
# submitted with the event log on.
mkdir -p "$T/events"
scripts/ember-submit --master "$url" --name wc-log --executor-memory 512m --conf ember.local.dir="$T" \
    --conf ember.driver.host=localhost --conf ember.eventLog.enabled=true --conf ember.eventLog.dir="$T/events" \
    "$B/examples/wordcount" tests/data/words.txt 3 > /dev/null 2> "$T/submit-log.err" && rc=0 || rc=$?
check "a submitted application with the event log on leaves one finished log" \
    '[ "$rc" = 0 ] && [ "$(ls "$T/events" | wc -l)" = 1 ] && ! ls "$T/events" | grep -q inprogress'
hout=$(scripts/start-history-server.sh --host localhost --port 0 "$T/events")
check "start-history-server.sh: it listens, with the application's log loaded" \
    'printf "%s\n" "$hout" | grep -q "listening on http://localhost:[0-9]*, 1 event logs of"'
hpid=$(cat "$T"/pids/ember-*-history-server-1.pid)
scripts/stop-history-server.sh > /dev/null
check "stop-history-server.sh stopped it and removed its PID file" \
    '! kill -0 "$hpid" 2>/dev/null && ! ls "$T"/pids | grep -q history'

# A PID file naming another process: stop-worker.sh leaves it alone.
sleep 300 &
spid=$!
echo "$spid" > "$(echo "$T"/pids/ember-*-worker-1.pid | sed 's/-1\.pid$/-2.pid/')"
EMBER_WORKER_INSTANCE=2 scripts/stop-worker.sh > /dev/null
check "a stop script does not signal a process it did not start" 'kill -0 "$spid" 2>/dev/null'
kill "$spid"; wait "$spid" 2>/dev/null || true; spid=""

# A second worker on this host: instance 2 gets the shuffle service port
# 7338 and says so; --memory 1024 is 1024 MiB.
EMBER_WORKER_INSTANCE=2 scripts/start-worker.sh "$url" --host localhost --cores 1 --memory 1024 \
    --work-dir "$T/work2" > "$T/worker2.out" 2>&1 || true
check "EMBER_WORKER_INSTANCE=2: shuffle service port 7338, said" 'grep -q "instance 2: shuffle service port 7338" "$T/worker2.out"'
check "EMBER_WORKER_INSTANCE=2: web UI port 8082, said" 'grep -q "instance 2: web UI port 8082" "$T/worker2.out"'
check "the second worker's web UI listens (8082, or the next free port)" 'grep -q "web UI on http://localhost:80[89][0-9]$" "$T"/logs/ember-*-worker-2.out'
check "the second worker registered" 'grep -q "registered with" "$T/worker2.out"'
check "the second worker's shuffle service is on 7338" 'grep -q "shuffle service on localhost:7338" "$T"/logs/ember-*-worker-2.out'
check "--memory 1024 is 1024 MiB" 'grep -q "1 cores, 1024 MiB" "$T"/logs/ember-*-worker-2.out'
EMBER_WORKER_INSTANCE=2 scripts/stop-worker.sh > /dev/null
check "a stopping worker does not register again" '! grep -q "registering again" "$T"/logs/ember-*-worker-2.out && grep -q "the worker is stopping" "$T"/logs/ember-*-worker-2.out'

# ember-submit's messages name what the user wrote.
err=$(EMBER_CONF_DIR="$T/none" scripts/ember-submit "$B/examples/pi" 2>&1 || true)
check "ember-submit without a master says where a master may be set" \
    'case "$err" in *"no master: give --master URL, or set \$EMBER_MASTER, or ember.master in a properties file"*) true ;; *) false ;; esac'
check "... and names no blank file" 'case "$err" in *" in ,"*) false ;; *) true ;; esac'
err=$(scripts/ember-submit --master "$url" --executor-memory lots "$B/examples/pi" 2>&1 || true)
check "a bad --executor-memory is reported by its flag" \
    'case "$err" in *"--executor-memory lots: "*) true ;; *) false ;; esac && case "$err" in *EMBER_CONF*) false ;; *) true ;; esac'
[ -n "$err" ] && printf '%s\n' "$err" | grep -q -- "--executor-memory lots" || echo "  $err"

# A daemon refused a non-loopback address without a secret says so once.
for d in master worker; do
    if [ "$d" = master ]; then set -- --port 0 --webui-port 0; else set -- ember://127.0.0.1:1; fi
    err=$(env -u EMBER_SECRET_FILE "$B/bin/ember-$d" --host 192.0.2.1 "$@" 2>&1 || true)
    check "ember-$d: the refused address, its name once" \
        '[ "$(printf "%s\n" "$err" | grep -o "ember-$d:" | wc -l)" -eq 1 ] && case "$err" in *"binding 192.0.2.1"*) true ;; *) false ;; esac'
done

# Drivers linked against libember.so, on a worker whose environment has no
# LD_LIBRARY_PATH: the driver uploads libember.so beside its binary and the
# worker starts the executor with it on the library path; a library of the
# driver's own that the worker cannot load fails the application at its
# first executor launch, naming the library.  (The statically linked word
# count above uploaded nothing but its binary.)
check "a statically linked driver uploads no library" \
    '[ -z "$(find "$T/work/bin" -mindepth 1 \( -name "*.lib" -o -type d \))" ]'
scripts/stop-worker.sh > /dev/null
env -u LD_LIBRARY_PATH scripts/start-worker.sh "$url" --host localhost --cores 1 --memory 512m \
    --work-dir "$T/work-shared" > "$T/worker-shared.out"
wlog=$(echo "$T"/logs/ember-*-worker-1.out)
got=$(LD_LIBRARY_PATH="$B" scripts/ember-submit --master "$url" --name wc-shared --executor-memory 512m \
      --conf ember.local.dir="$T" --conf ember.driver.host=localhost \
      "$B/shared/wordcount" tests/data/words.txt 3 2> "$T/submit-shared.err" | grep -v '^word ' || true)
check "a driver linked against libember.so runs on a worker without LD_LIBRARY_PATH" \
    '[ -n "$got" ] && [ "$got" = "$want" ]'
[ "$got" = "$want" ] || { echo "  want: $want"; echo "  got:  $got"; cat "$T/submit-shared.err"; tail -n 20 "$wlog"; }
check "the worker keeps libember.so by its hash, linked from the binary" \
    '[ -f "$(echo "$T"/work-shared/bin/*.lib/libember.so.0)" ]'
before=$(grep -c "started executor" "$wlog" || true)
LD_LIBRARY_PATH="$B:$B/shared/extra" scripts/ember-submit --master "$url" --name needlib --executor-memory 512m \
    --conf ember.local.dir="$T" --conf ember.driver.host=localhost \
    "$B/shared/needlib" > "$T/needlib.out" 2> "$T/needlib.err" && rc=0 || rc=$?
launches=$(( $(grep -c "started executor" "$wlog" || true) - before ))
check "a library the worker cannot load fails the application (exit status 1)" '[ "$rc" = 1 ]'
check "  with a message naming the library and what to do" \
    'grep -q "libneedlib_extra.so" "$T/needlib.err" && grep -q "link the program statically" "$T/needlib.err"'
check "  at the first executor launch (launches: $launches)" '[ "$launches" = 1 ]'
[ "$rc" = 1 ] && [ "$launches" = 1 ] || { cat "$T/needlib.out" "$T/needlib.err"; tail -n 20 "$wlog"; }

scripts/stop-worker.sh > /dev/null
scripts/stop-master.sh > /dev/null
gone() { ! kill -0 "$1" 2>/dev/null || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
check "stop-worker.sh and stop-master.sh stopped both" 'gone "$mpid" && gone "$wpid"'
check "no PID file is left" '[ -z "$(ls "$T/pids")" ]'
check "the application's work directory and the secret's copy went with it" '[ -z "$(ls "$T/work" | grep -v "^bin$")" ]'
check "a stopped worker did not try to register again" '! grep -q "registering again" "$T"/logs/ember-*-worker-1.out'
check "the failed application's executor log is kept, naming the library" \
    'grep -qs libneedlib_extra.so $(find "$T/work-shared" -name stderr)'
echo "scripts: $npass passed, $nfail failed, 0 skipped"
exit $fail
