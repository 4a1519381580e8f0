#!/bin/sh
# stop-worker.sh -- stop the worker start-worker.sh started (by its PID
# file, instance $EMBER_WORKER_INSTANCE); it stops its executors.
exec "$(dirname "$0")/ember-daemon.sh" stop worker
