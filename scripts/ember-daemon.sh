#!/bin/sh
# ember-daemon.sh -- start or stop one ember daemon in the background, with
# a PID file and a log, as Spark's spark-daemon.sh.  The start-* and stop-*
# scripts call it; it is not meant to be run by hand.
#
#   ember-daemon.sh start master|worker|history-server [DAEMON ARGS...]
#   ember-daemon.sh stop master|worker|history-server
#
# PID files go to $EMBER_PID_DIR (default /tmp), logs to $EMBER_LOG_DIR
# (default logs/ next to this script's directory), named
# ember-$USER-<role>-<instance>.pid/.out; the instance is
# $EMBER_WORKER_INSTANCE for workers (default 1).  The binaries are looked
# for in $EMBER_BIN_DIR, then bin/ and build/bin/ next to this script's
# directory.  stop only signals the process its PID file names, and only
# if that process is the daemon it started.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
action="${1:-}"
role="${2:-}"
[ $# -ge 2 ] && shift 2 || { echo "usage: ember-daemon.sh start|stop master|worker|history-server [ARGS...]" >&2; exit 2; }
case "$role" in master|worker|history-server) ;; *) echo "ember-daemon.sh: unknown role $role" >&2; exit 2 ;; esac

name="ember-$role"
inst=1
[ "$role" = worker ] && inst="${EMBER_WORKER_INSTANCE:-1}"
user="${USER:-$(id -un)}"
piddir="${EMBER_PID_DIR:-/tmp}"
logdir="${EMBER_LOG_DIR:-$here/../logs}"
pidfile="$piddir/ember-$user-$role-$inst.pid"
log="$logdir/ember-$user-$role-$inst.out"

bin=""
for d in "${EMBER_BIN_DIR:-}" "$here/../bin" "$here/../build/bin"; do
    if [ -n "$d" ] && [ -x "$d/$name" ]; then bin="$d/$name"; break; fi
done

# Whether pid runs our daemon (its executable is $name).
ours() {
    exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
    case "$exe" in */"$name"|*/"$name"" (deleted)") return 0 ;; *) return 1 ;; esac
}

case "$action" in
start)
    [ -n "$bin" ] || { echo "$name: not found (set EMBER_BIN_DIR, or build with make)" >&2; exit 1; }
    mkdir -p "$piddir" "$logdir"
    if [ -f "$pidfile" ]; then
        pid=$(cat "$pidfile")
        if ours "$pid"; then echo "$name running as process $pid; stop it first" >&2; exit 1; fi
        rm -f "$pidfile"
    fi
    : >> "$log"
    start_line=$(wc -l < "$log")
    nohup "$bin" "$@" >> "$log" 2>&1 < /dev/null &
    pid=$!
    echo "$pid" > "$pidfile"
    # Ready once its first event is logged; a daemon that exits at once
    # (a bad flag, a port in use) reports why.
    ready="listening on"
    [ "$role" = worker ] && ready="registered with"
    i=0
    while [ $i -lt 100 ]; do
        if ! kill -0 "$pid" 2>/dev/null; then
            rm -f "$pidfile"
            echo "$name failed to start:" >&2
            tail -n +"$((start_line + 1))" "$log" >&2
            exit 1
        fi
        line=$(tail -n +"$((start_line + 1))" "$log" | grep -m1 "$ready" || true)
        [ -n "$line" ] && break
        sleep 0.1
        i=$((i + 1))
    done
    echo "$name started as process $pid, logging to $log"
    [ -n "$line" ] && echo "  $line"
    ;;
stop)
    if [ ! -f "$pidfile" ]; then echo "no $name to stop ($pidfile does not exist)"; exit 0; fi
    pid=$(cat "$pidfile")
    if ! ours "$pid"; then
        echo "no $name to stop: process $pid of $pidfile is not one (a stale PID file, removed)"
        rm -f "$pidfile"
        exit 0
    fi
    kill -TERM "$pid"
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    if kill -0 "$pid" 2>/dev/null; then
        echo "$name (process $pid) did not stop in 10 s: killing it"
        kill -KILL "$pid"
    fi
    rm -f "$pidfile"
    echo "stopped $name (process $pid)"
    ;;
*) echo "usage: ember-daemon.sh start|stop master|worker|history-server [ARGS...]" >&2; exit 2 ;;
esac
