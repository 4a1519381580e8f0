#!/bin/sh
# check.sh -- the link checks `make test-link` runs (part of `make test`).
#
#     sh tests/link/check.sh BUILD_DIR VARIANT...   (from the top of the tree)
#
# 1. libember.so exports exactly the functions include/ember.h and
#    include/ember_ml.h declare with EM_API, and libember.a defines no other
#    global name but em__ ones: every internal name is hidden (.so) or
#    local (.a), except the few mllib calls, renamed em__ (reserved).
#    A driver using no mllib function does not load OpenBLAS.
# 2. tests/link/collide.c, a driver defining its own rm_tree, ctx_run,
#    dag_new, shuffle_read, bs_new, ebuf_free and text_plan, linked as BUILD_DIR/link/collide-VARIANT
#    (static: against libember.a; shared: against libember.so, with
#    -rdynamic; full-static: cc -static), runs a shuffle job in a fresh
#    ember.local.dir: right answer, none of its functions called by the
#    library, the directory empty after em_close.
# Everything it creates lives in one mktemp directory, removed on exit.
# Prints one line per failed check and exits 1 if any failed.
set -u
B=${1:?usage: check.sh BUILD_DIR VARIANT...}
shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ember-link.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0
bad() {
    echo "test-link: $*" >&2
    fail=1
}

# --- 1. exported names
grep -ho '^EM_API [^(]*(' include/ember.h include/ember_ml.h |
    sed -E 's/.*[ *](em_[a-z0-9_]+)\($/\1/' | sort -u >"$tmp/api"
[ -s "$tmp/api" ] || bad "no EM_API declaration found in include/ember.h"
# A public function declared without the marker would be hidden, so
# missing from libember.so yet unnoticed by the comparison below.  The
# header's static inline copies (em__i64_dec, ...) are compiled into the
# caller and are not the library's to export.
unmarked=$(grep -nE '^[A-Za-z_][A-Za-z0-9_ ]*[ *]em_[a-z0-9_]+\(' include/ember.h include/ember_ml.h |
    grep -vE ':(EM_API |typedef |static __inline__ )')
[ -z "$unmarked" ] || bad "declared without EM_API, so not exported: $unmarked"
nm -D --defined-only "$B/libember.so" | awk 'NF >= 3 { print $NF }' | sort -u >"$tmp/so" ||
    bad "nm -D $B/libember.so failed"
nm -g --defined-only "$B/libember.a" | awk 'NF >= 3 { print $NF }' | sort -u >"$tmp/a" ||
    bad "nm -g $B/libember.a failed"
# A --coverage build (make coverage) links gcc's libgcov into the shared
# library, which exports its own names.
case ${SANITIZED:-} in
*--coverage*)
    for lib in so a; do
        grep -vE '^(__gcov_|mangle_path$)' "$tmp/$lib" >"$tmp/$lib.nogcov" || true
        mv "$tmp/$lib.nogcov" "$tmp/$lib"
    done ;;
esac
# libember.a's core member keeps the few internal functions its mllib member
# calls global, under ember's reserved prefix em__ (scripts/seal-lib.sh).
grep -v '^em__' "$tmp/a" >"$tmp/a.api"
mv "$tmp/a.api" "$tmp/a"
for lib in so a; do
    extra=$(comm -23 "$tmp/$lib" "$tmp/api" | tr '\n' ' ')
    missing=$(comm -13 "$tmp/$lib" "$tmp/api" | tr '\n' ' ')
    [ -z "$extra" ] || bad "libember.$lib exports names that are not EM_API functions of ember.h/ember_ml.h" \
        "(internal names must stay hidden): $extra"
    [ -z "$missing" ] || bad "libember.$lib does not export these EM_API functions: $missing"
done

# A program that calls no em_ml_* function does not pull mllib out of
# libember.a, so it does not load OpenBLAS (whose threads start at load).
# (Not checked in sanitizer builds, whose link keeps every -l library.)
if [ -z "${SANITIZED:-}" ] && readelf -d "$B/link/collide-static" 2>/dev/null | grep -q 'NEEDED.*openblas'; then
    bad "collide-static, which uses no mllib function, needs libopenblas: mllib was pulled out of libember.a"
fi

# --- 2. a driver with functions named like ember internals
names="rm_tree ctx_run dag_new shuffle_read bs_new ebuf_free text_plan"
for v in "$@"; do
    prog=$B/link/collide-$v
    # The check means something only if the program really defines the names
    # as global functions (and, linked against libember.so, exports them).
    if [ "$v" = shared ]; then syms=$(nm -D --defined-only "$prog"); else syms=$(nm --defined-only "$prog"); fi
    for n in $names; do
        echo "$syms" | grep -q " T $n\$" ||
            bad "collide-$v does not define a global $n: the check would prove nothing"
    done
    dir=$(mktemp -d "$tmp/local-$v.XXXXXX") || exit 1
    if ! LD_LIBRARY_PATH="$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$prog" "$dir"; then
        bad "collide-$v failed: a program's own $names must not change what libember does"
    fi
done

[ $fail = 0 ] && echo "test-link: exported names and name collisions: ok"
exit $fail
