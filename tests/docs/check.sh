#!/bin/sh
# check.sh BUILD -- the shell command examples of the docs still run.  Every
# line of a fenced sh block in docs/*.md and README.md (continuations
# joined, a "$ " prompt and a trailing comment dropped) whose command is
# make, a build/ program or a scripts/ script is checked: a make target
# must exist in the Makefile; a program or script must exist and be
# executable (build/ read as BUILD), every --flag on the line must appear in
# its --help (the scripts' flags in their daemon's), and every path the
# line names under tests/, docs/, examples/, scripts/ or conf/ must exist.
# An example program whose master is local (none, local, local[N],
# local-cluster[...]) and that writes no file (no --output, --model or
# event log) is run, as shown, and must exit 0.  Other lines (output, cc, export, curl, ./a.out) are not
# commands of the tree and are skipped.  Run by `make test-docs`.
set -eu
B="${1:-build}"
fail=0
n=0
T=$(mktemp -d /tmp/ember-docs-XXXXXX)
trap 'rm -rf "$T"' EXIT
bad() { echo "FAIL docs: $1: $2"; fail=1; }

# The help text a --flag of prog must appear in.
help_of() {
    case "$1" in
    */start-worker.sh) "$B/bin/ember-worker" --help ;;
    */start-master.sh) "$B/bin/ember-master" --help ;;
    */start-history-server.sh) "$B/bin/ember-history-server" --help ;;
    */stop-*.sh) echo ;;
    *) "$1" --help ;;
    esac 2>&1
}

awk 'FNR == 1 { f = 0 }
     /^```sh$/ { f = 1; next }
     /^```/ { f = 0 }
     f {
         line = $0
         if (cont != "") { line = cont " " line; cont = "" }
         if (line ~ /\\$/) { sub(/\\$/, "", line); cont = line; next }
         print FILENAME "\t" line
     }' docs/*.md README.md > "$T/lines"

while IFS='	' read -r file line; do
    line=${line#\$ }
    line=$(printf '%s\n' "$line" | sed 's/[[:space:]]#.*$//')
    # Environment assignments first, then the command.
    envs=""
    set -f
    set -- $line
    set +f
    while [ $# -gt 0 ]; do
        case "$1" in [A-Z_]*=*) envs="$envs $1"; shift ;; *) break ;; esac
    done
    [ $# -gt 0 ] || continue
    cmd="$1"
    shift
    case "$cmd" in
    make)
        n=$((n + 1))
        for t in "$@"; do
            case "$t" in -*|*=*|*'$('*|*'"'*) continue ;; esac
            grep -q "^$t:" Makefile || bad "$file" "make $t: no such target"
        done
        continue ;;
    build/fuzz/*) continue ;; # made by make fuzz only
    build/*) prog="$B/${cmd#build/}" ;;
    scripts/*) prog="$cmd" ;;
    *) continue ;;
    esac
    n=$((n + 1))
    if [ ! -x "$prog" ]; then bad "$file" "$cmd: not found (or not executable)"; continue; fi
    h=$(help_of "$prog")
    for a in "$@"; do
        a=$(printf '%s' "$a" | sed "s/^['\"]//; s/['\"]\$//")
        case "$a" in
        --*) printf '%s\n' "$h" | grep -q -- "${a%%=*}" || bad "$file" "$cmd: no flag $a in its --help" ;;
        tests/*|docs/*|examples/*|scripts/*|conf/*) [ -e "$a" ] || bad "$file" "$cmd: $a does not exist" ;;
        build/examples/*|build/bin/*) [ -x "$B/${a#build/}" ] || bad "$file" "$cmd: $a does not exist" ;;
        esac
    done
    # Run a local example as shown.
    case "$cmd" in build/examples/*) ;; *) continue ;; esac
    case " $* " in *" --model "*|*" --output "*|*ember.eventLog.enabled=true*) continue ;; esac
    master=$(printf '%s\n' "$line" | grep -o "ember://[^ ']*" || true)
    [ -z "$master" ] || continue
    rest=${line#*"$cmd"}
    if ! (eval "env$envs \"\$prog\"$rest") > "$T/out" 2>&1; then
        bad "$file" "$line: exited with an error:"
        sed 's/^/  /' "$T/out" | tail -5
    fi
done < "$T/lines"
echo "docs: $n command examples checked"
exit $fail
