#!/bin/sh
# stop-master.sh -- stop the master start-master.sh started (by its PID
# file; nothing else is signalled).
exec "$(dirname "$0")/ember-daemon.sh" stop master
