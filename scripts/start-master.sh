#!/bin/sh
# start-master.sh [ember-master flags...] -- start the cluster's master in
# the background (127.0.0.1:7077, status on :8080 unless the flags say
# otherwise), its PID in $EMBER_PID_DIR and its log in $EMBER_LOG_DIR.
exec "$(dirname "$0")/ember-daemon.sh" start master "$@"
