#!/bin/sh
# seal-lib.sh -- make libember.a's two members from two partially linked
# objects, so that no internal name of ember can collide with a program's:
#
#     sh scripts/seal-lib.sh OBJCOPY CORE_IN ML_IN CORE_OUT ML_OUT
#
# CORE_IN is engine/, scheduler/ and executor/ linked with -r, ML_IN is
# mllib/ linked the same way; both were compiled with -fvisibility=hidden,
# so every internal name is a hidden global and the API (EM_API) is default.
#
# Two members rather than one: a program that calls no em_ml_* function
# never pulls the mllib member out of the archive, so it does not link
# OpenBLAS, whose threads would otherwise start (and spin) in every ember
# program.  mllib calls a few of the core's internal functions; those stay
# global, renamed into ember's reserved prefix em__ (ember.h reserves every
# name starting with em_), in both members.  Every other hidden name is made
# local.  The core never refers to mllib.
set -eu
OBJCOPY=$1 CORE_IN=$2 ML_IN=$3 CORE_OUT=$4 ML_OUT=$5
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ember-seal.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Hidden globals the core defines, and names mllib leaves undefined.
readelf -sW "$CORE_IN" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $6 == "HIDDEN" && $7 != "UND" { print $8 }' |
    sort -u >"$tmp/hidden"
nm -u "$ML_IN" | awk '{ print $NF }' | sort -u >"$tmp/ml-undef"
# The core's internal names that mllib uses: kept global under em__.
comm -12 "$tmp/hidden" "$tmp/ml-undef" >"$tmp/shared"
awk '!/^em__/ { print $1, "em__" $1 }' "$tmp/shared" >"$tmp/rename"
# Every other hidden name of the core is localized (under its final name).
comm -23 "$tmp/hidden" "$tmp/shared" >"$tmp/local"

"$OBJCOPY" --redefine-syms="$tmp/rename" --localize-symbols="$tmp/local" "$CORE_IN" "$CORE_OUT"
"$OBJCOPY" --redefine-syms="$tmp/rename" --localize-hidden "$ML_IN" "$ML_OUT"
