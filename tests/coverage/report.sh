#!/bin/sh
# report.sh -- line and branch coverage per folder and per file, from the
# .gcda counts a --coverage build's runs left in BUILD (make coverage).
#
#   sh tests/coverage/report.sh BUILD [REPORT]
#
# Runs gcov (gcc's own, no other tool) over each library folder's objects,
# prints a table per folder, the 15 least-covered files, and the files of
# the wire, the shuffle and the scheduler, and writes the whole per-file
# table to REPORT (default BUILD/coverage.txt).  A file with no .gcda ran
# no line at all and counts as 0%.  Branches are gcov's "taken at least
# once" of the branches the compiler made.
set -eu
B=${1:?usage: report.sh BUILD [REPORT]}
OUT=${2:-$B/coverage.txt}
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.s"' EXIT

# One line per source file: folder file lines_total lines_hit br_total br_hit
for dir in engine scheduler executor mllib; do
    for src in $dir/*.c; do
        case $src in *_main.c) continue ;; esac
        obj=$B/${src%.c}.o
        [ -f "$obj" ] || continue
        gcda=$B/${src%.c}.gcda
        if [ ! -f "$gcda" ]; then
            # Never ran: count its lines from the notes file alone.
            gcov -n -o "$B/$dir" "$src" 2>/dev/null | awk -v f="$src" -v d="$dir" '
                $0 ~ "^File .*" f "\x27" {take = 1; next}
                take && /^Lines executed:/ {split($0, a, " of "); printf "%s %s %d 0 0 0\n", d, f, a[2]; exit}
            ' >> "$tmp" || true
            continue
        fi
        gcov -n -b -o "$B/$dir" "$src" 2>/dev/null | awk -v f="$src" -v d="$dir" '
            function count(s,   a, p) { split(s, a, " of "); p = a[1]; sub(/.*:/, "", p); sub(/%/, "", p); return int(p * a[2] / 100 + 0.5) " " a[2] }
            $0 ~ "^File .*" f "\x27" {take = 1; next}
            /^File / {take = 0}
            take && /^Lines executed:/ {split(count($0), l, " ")}
            take && /^Taken at least once:/ {split(count($0), b, " ")}
            take && /^No branches/ {b[1] = 0; b[2] = 0}
            END { if (l[2] != "") printf "%s %s %d %d %d %d\n", d, f, l[2], l[1], b[2], b[1] }
        ' >> "$tmp"
    done
done

pct() { awk -v h="$1" -v t="$2" 'BEGIN { if (t > 0) printf "%5.1f%%", 100 * h / t; else printf "    -" }'; }

{
    echo "coverage of the library (gcov; lines hit / lines, branches taken / branches)"
    echo
    printf "%-12s %8s %14s %8s %14s\n" folder lines "" branches ""
    for dir in engine scheduler executor mllib; do
        set -- $(awk -v d="$dir" '$1 == d { lt += $3; lh += $4; bt += $5; bh += $6 } END { print lt + 0, lh + 0, bt + 0, bh + 0 }' "$tmp")
        printf "%-12s %8s %6d/%-7d %8s %6d/%-7d\n" "$dir" "$(pct "$2" "$1")" "$2" "$1" "$(pct "$4" "$3")" "$4" "$3"
    done
    set -- $(awk '{ lt += $3; lh += $4; bt += $5; bh += $6 } END { print lt + 0, lh + 0, bt + 0, bh + 0 }' "$tmp")
    printf "%-12s %8s %6d/%-7d %8s %6d/%-7d\n" all "$(pct "$2" "$1")" "$2" "$1" "$(pct "$4" "$3")" "$4" "$3"
    echo
    # The wire (frames, messages, connections, task descriptions and
    # results), the shuffle, and the scheduler, as groups.
    for group in "wire:engine/frame.c engine/msg.c engine/mpcheck.c engine/conn.c engine/auth.c engine/taskdesc.c engine/taskresult.c" \
                 "shuffle:executor/shuffle_" "scheduler:scheduler/"; do
        name=${group%%:*}
        pats=${group#*:}
        set -- $(awk -v pats="$pats" '
            BEGIN { n = split(pats, p, " ") }
            { for (i = 1; i <= n; i++) if (index($2, p[i]) == 1) { lt += $3; lh += $4; bt += $5; bh += $6; break } }
            END { print lt + 0, lh + 0, bt + 0, bh + 0 }' "$tmp")
        printf "%-12s %8s %6d/%-7d %8s %6d/%-7d\n" "$name" "$(pct "$2" "$1")" "$2" "$1" "$(pct "$4" "$3")" "$4" "$3"
    done
    echo
    echo "least-covered files (lines):"
    awk '$3 > 0 { printf "%7.1f%% %6d/%-6d %s\n", 100 * $4 / $3, $4, $3, $2 }' "$tmp" | sort -n | head -15
} > "$tmp.s"

{
    cat "$tmp.s"
    echo
    echo "every file (lines, branches):"
    awk '{ printf "%-36s %6.1f%% %6d/%-6d", $2, $3 ? 100 * $4 / $3 : 0, $4, $3;
           if ($5) printf " %6.1f%% %6d/%-6d\n", 100 * $6 / $5, $6, $5; else printf "      -\n" }' "$tmp" | sort
} > "$OUT"
cat "$tmp.s"
echo
echo "per file: $OUT"
