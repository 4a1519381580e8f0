#!/bin/sh
# start-history-server.sh [ember-history-server flags...] [LOG_DIR] -- start
# the history server in the background (127.0.0.1:18080 unless the flags say
# otherwise), its PID in $EMBER_PID_DIR and its log in $EMBER_LOG_DIR.
exec "$(dirname "$0")/ember-daemon.sh" start history-server "$@"
