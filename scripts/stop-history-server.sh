#!/bin/sh
# stop-history-server.sh -- stop the history server start-history-server.sh
# started (by its PID file; nothing else is signalled).
exec "$(dirname "$0")/ember-daemon.sh" stop history-server
