#!/bin/sh
# tests/ui/run.sh BUILD -- the browser test (make test-ui): headless
# Chromium, driven through chromedriver (tests/ui/check_ui.py), looks at
# the pages of a running driver (tests/ui/ui_app.c on local[2]) and then of
# the history server reading that application's event log.  Screenshots go
# to BUILD/ui/.  Every process it starts is stopped by PID; the temporary
# directory goes at the end.
set -eu
B=${1:-build}
cd "$(dirname "$0")/../.."
command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || sh scripts/install-deps.sh ui
tmp=$(mktemp -d /tmp/ember-ui.XXXXXX)
app=""
hist=""
cleanup() {
    [ -n "$app" ] && kill "$app" 2>/dev/null && wait "$app" 2>/dev/null || true
    [ -n "$hist" ] && kill "$hist" 2>/dev/null && wait "$hist" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
mkdir -p "$tmp/events" "$B/ui"
mkfifo "$tmp/in"

# The driver: it runs its jobs, prints "ui URL", and waits for its stdin
# (the fifo, held open below) to close.
"$B/tests/ui_app" 'local[2]' "$tmp/events" tests/data/words.txt < "$tmp/in" > "$tmp/app.out" 2> "$tmp/app.err" &
app=$!
exec 7> "$tmp/in"
i=0
until grep -q '^ui ' "$tmp/app.out" 2>/dev/null; do
    if ! kill -0 "$app" 2>/dev/null || [ $i -ge 600 ]; then
        echo "ui_app did not start:"; cat "$tmp/app.err"; exit 1
    fi
    sleep 0.1; i=$((i + 1))
done
url=$(awk '/^ui /{print $2}' "$tmp/app.out")
TMPDIR="$tmp" python3 tests/ui/check_ui.py driver "$url" "$B/ui" # Chromium's profile dirs go in $tmp
exec 7>&-
wait "$app"
app=""

# The history server over the finished log.
EMBER_READY_FD=8 "$B/bin/ember-history-server" --port 0 "$tmp/events" 8> "$tmp/hport" > "$tmp/hist.log" 2>&1 &
hist=$!
i=0
until [ -s "$tmp/hport" ]; do
    if ! kill -0 "$hist" 2>/dev/null || [ $i -ge 300 ]; then
        echo "the history server did not start:"; cat "$tmp/hist.log"; exit 1
    fi
    sleep 0.1; i=$((i + 1))
done
TMPDIR="$tmp" python3 tests/ui/check_ui.py history "http://127.0.0.1:$(cat "$tmp/hport")" "$B/ui"
echo "browser test: every page passed; screenshots in $B/ui/"
