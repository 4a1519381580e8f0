#!/bin/sh
# start-worker.sh MASTER [ember-worker flags...] -- start a worker of the
# cluster whose master is MASTER (ember://HOST:PORT) in the background.
# Its work directory is $EMBER_WORKER_DIR, else work/ next to this
# script's directory, unless --work-dir is given.  $EMBER_WORKER_INSTANCE
# numbers several workers on one machine: instance n gets its own PID file
# and log, the shuffle service port 7337 + n - 1 unless the flags set
# ember.shuffle.service.port, and the web UI port 8081 + n - 1 unless they
# give --webui-port or ember.worker.ui.port (as Spark's start-worker.sh
# numbers its workers' ports); give each instance its own --work-dir.
# Every flag, --webui-port too, goes to ember-worker as given.
case "${1:-}" in ""|-*) echo "usage: start-worker.sh MASTER [ember-worker flags...]" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "${EMBER_WORKER_INSTANCE:-}" ]; then
    inst="$EMBER_WORKER_INSTANCE"
    case "$inst" in
    *[!0-9]*|0*) echo "start-worker.sh: EMBER_WORKER_INSTANCE=$inst: expected a number from 1" >&2; exit 2 ;;
    esac
    case " $* " in
    *"ember.shuffle.service.port="*) ;;
    *)
        port=$((7337 + inst - 1))
        echo "start-worker.sh: instance $inst: shuffle service port $port (7337 + $inst - 1)"
        set -- "$@" --conf "ember.shuffle.service.port=$port"
        ;;
    esac
    case " $* " in
    *" --webui-port "*|*"ember.worker.ui.port="*) ;;
    *)
        port=$((8081 + inst - 1))
        echo "start-worker.sh: instance $inst: web UI port $port (8081 + $inst - 1)"
        set -- "$@" --webui-port "$port"
        ;;
    esac
fi
case " $* " in
*" --work-dir "*) exec "$here/ember-daemon.sh" start worker "$@" ;;
*) exec "$here/ember-daemon.sh" start worker --work-dir "${EMBER_WORKER_DIR:-$here/../work}" "$@" ;;
esac
