#!/bin/sh
# The layers' one-way rule (docs/architecture.md, "Layers"), checked over
# every #include "..." line of the library and the examples:
#
#   engine/    includes engine/ and include/ only, except the wiring file
#              engine/open.c, which builds the context from all three layers
#   scheduler/ includes nothing from executor/
#   executor/  includes from scheduler/ only the backend seam: backend.h and
#              events.h
#   mllib/     includes include/, engine/ and mllib/ only
#   examples/  include include/ember.h only
#
# and the shape of the files: each opens with a comment "NAME -- what it is
# for", and no library .c file passes 1,200 lines.
#
# Headers are found by name in the four folders (the Makefile puts each on
# the include path); a name in two folders is itself an error.  Prints each
# broken include as FILE:LINE: and exits 1 if there is any.
#
# Given a build directory (`check.sh build`), it checks the calls as well:
# no library object but engine/open.o calls a function defined in a layer
# above its own (an include can be dodged with a declaration of one's own;
# a call cannot), and executor/ calls from scheduler/ only what
# scheduler/events.o defines.
root=$(cd "$(dirname "$0")/../.." && pwd) || exit 2
cd "$root" || exit 2
build=${1:+$(cd "$1" 2>/dev/null && pwd)}
tmp=$(mktemp) && defs=$(mktemp) && undefs=$(mktemp) || exit 2
trap 'rm -f "$tmp" "$defs" "$undefs"' EXIT
for d in include engine scheduler executor mllib; do
    for h in "$d"/*.h; do
        [ -e "$h" ] && echo "${h##*/} $d"
    done
done | sort > "$tmp"
dup=$(awk '{print $1}' "$tmp" | uniq -d)
if [ -n "$dup" ]; then
    echo "layers: a header name in two folders: $dup"
    exit 1
fi
# One concept per file: each opens with "NAME -- what it is for", and no
# library .c file passes 1,200 lines.
shape=0
for f in include/*.h engine/*.[ch] scheduler/*.[ch] executor/*.[ch] mllib/*.[ch]; do
    b=${f##*/}
    sed -n '1,2p' "$f" | grep -qE "^(/| )[*] $b -- " ||
        { echo "$f:1: does not open with \"$b -- what it is for\""; shape=1; }
    case "$f" in
    *.c) n=$(wc -l < "$f")
         [ "$n" -le 1200 ] || { echo "$f: $n lines, over 1,200: split it"; shape=1; } ;;
    esac
done
[ "$shape" = 0 ] || { echo "layers: files out of shape (above)"; exit 1; }
grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' \
    engine/*.[ch] scheduler/*.[ch] executor/*.[ch] mllib/*.[ch] examples/*.c |
awk -v map="$tmp" '
BEGIN { while ((getline l < map) > 0) { split(l, a, " "); dir[a[1]] = a[2] } }
{
    split($0, p, ":"); file = p[1]; line = p[2]
    h = $0; sub(/^[^"]*"/, "", h); sub(/".*/, "", h); sub(/^.*\//, "", h)
    from = file; sub(/\/.*/, "", from)
    to = dir[h]
    if (to == "") next                   # a header of its own folder set, e.g. pow5_table
    bad = ""
    if (from == "engine" && file != "engine/open.c" &&
        to != "engine" && to != "include") bad = "engine includes " to
    else if (from == "scheduler" && to == "executor") bad = "scheduler includes executor"
    else if (from == "executor" && to == "scheduler" &&
             h != "backend.h" && h != "events.h") bad = "executor includes scheduler beyond backend.h and events.h"
    else if (from == "mllib" && to != "include" && to != "engine" && to != "mllib") bad = "mllib includes " to
    else if (from == "examples" && to != "include") bad = "examples include " to
    if (bad != "") { printf "%s:%s: %s (%s/%s)\n", file, line, bad, to, h; n++ }
}
END { if (n) { printf "layers: %d include(s) break the one-way rule\n", n; exit 1 } }' || exit 1
[ -n "$build" ] || exit 0
# The objects of the library's sources now (a build directory may hold
# objects of files since renamed).
objs=$(ls engine/*.c scheduler/*.c executor/*.c mllib/*.c | grep -v '_main\.c$' | sed 's/\.c$/.o/')
cd "$build" || exit 2
for o in $objs; do
    [ -f "$o" ] || { echo "layers: $build/$o is missing: build the library first"; exit 2; }
done
for o in $objs; do nm --defined-only -g "$o" | awk -v o="$o" 'NF == 3 && $2 ~ /[TDBRCVW]/ {print $3, o}'; done | sort > "$defs"
for o in $objs; do nm -u "$o" | awk -v o="$o" '{print $NF, o}'; done | sort > "$undefs"
join "$undefs" "$defs" | awk '
function layer(o) { sub(/\/.*/, "", o); return o }
{
    sym = $1; from = $2; to = $3; lf = layer(from); lt = layer(to)
    if (lf == lt) next
    bad = ""
    if (lf == "engine" && from != "engine/open.o" && (lt == "scheduler" || lt == "executor")) bad = "engine calls " lt
    else if (lf == "scheduler" && lt == "executor") bad = "scheduler calls executor"
    else if (lf == "executor" && lt == "scheduler" && to != "scheduler/events.o") bad = "executor calls scheduler beyond events"
    else if (lf == "mllib" && lt != "engine") bad = "mllib calls " lt
    if (bad != "") { printf "%s: %s: %s (defined in %s)\n", from, bad, sym, to; n++ }
}
END { if (n) { printf "layers: %d call(s) break the one-way rule\n", n; exit 1 } }'
