#!/bin/sh
# start-worker.sh MASTER [ember-worker flags...] -- start a worker of the
# cluster whose master is MASTER (ember://HOST:PORT) in the background.
# Its work directory is $EMBER_WORKER_DIR, else work/ next to this
# script's directory, unless --work-dir is given.  $EMBER_WORKER_INSTANCE
# numbers several workers on one machine.
case "${1:-}" in ""|-*) echo "usage: start-worker.sh MASTER [ember-worker flags...]" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
case " $* " in
*" --work-dir "*) exec "$here/ember-daemon.sh" start worker "$@" ;;
*) exec "$here/ember-daemon.sh" start worker --work-dir "${EMBER_WORKER_DIR:-$here/../work}" "$@" ;;
esac
