#!/bin/sh
# tests/examples/run.sh BUILD -- command-line tests of the example programs
# in BUILD/examples (run by `make test`, from the top of the tree).
#
# For every example: --help prints the usage on stdout and exits 0; an
# unknown option exits 2 naming that option; --conf ember.progress=false is
# accepted; an unknown --conf key exits 2 naming it; a failure after
# em_open exits 1 and leaves no scratch directory behind.  For logreg: a
# malformed number exits 2 naming its option before any data is read, and a
# model saved with --model applies to raw rows (its accuracy on the raw CSV,
# computed here with awk, is the training accuracy logreg printed); on the
# iris CSV it infers three classes and trains the multinomial model.
#
# Prints one line per check and "examples: N passed, N failed, N skipped"
# last (none is ever skipped); exit
# status 1 if any check failed.
set -u
BUILD=${1:-build}
EX=$BUILD/examples
T=$(mktemp -d "${TMPDIR:-/tmp}/ember-examples-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
unset EMBER_MASTER
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "ok   examples: $1"; }
bad() { failed=$((failed + 1)); echo "FAIL examples: $1"; sed 's/^/  | /' "$T/err" "$T/out" 2>/dev/null | head -20; }

# expect NAME STATUS PATTERN CMD...: CMD exits with STATUS and its stdout or
# stderr contains PATTERN (a fixed string; "" for any).
expect() {
    name=$1 want=$2 pat=$3
    shift 3
    "$@" > "$T/out" 2> "$T/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        bad "$name: exit status $got, expected $want"
    elif [ -n "$pat" ] && ! grep -qF -- "$pat" "$T/out" "$T/err"; then
        bad "$name: output lacks '$pat'"
    else
        ok "$name"
    fi
}

# Arguments that make each example run quickly and succeed.
args_wordcount="tests/data/words.txt 3 local[2]"
args_join="local[2]"
args_pi="1000 2 local[2]"
args_logreg="--iters 5 --master local[2]"

for ex in wordcount join pi logreg; do
    eval "args=\$args_$ex"
    expect "$ex --help" 0 "usage: $ex" "$EX/$ex" --help
    if [ -s "$T/err" ]; then bad "$ex --help: wrote to stderr"; fi
    expect "$ex unknown option" 2 "'--no-such-option'" "$EX/$ex" --no-such-option
    # shellcheck disable=SC2086
    expect "$ex --conf ember.progress=false" 0 "" "$EX/$ex" --conf ember.progress=false $args
    # shellcheck disable=SC2086
    expect "$ex --conf unknown key" 2 "unknown configuration key: no.such.key" \
        "$EX/$ex" --conf no.such.key=1 $args
    expect "$ex --conf without =" 2 "expected KEY=VALUE" "$EX/$ex" --conf ember.progress
done

# What the examples print, checked.  join: its three tables, row for row
# (the data is the program's own).
expect "join output" 0 "" "$EX/join" 'local[2]'
sed -n '1,/^lineage/p' "$T/out" | sed '$d' > "$T/join.got"
cat > "$T/join.want" <<'WANT'
join (id, name, amount):
    1  Ada             1.80
    1  Ada            25.00
    1  Ada            42.00
    2  Grace           3.50
    2  Grace          12.99
    3  Edsger          9.99
    5  Donald        120.00
left_outer_join (every customer, '-' without orders):
    1  Ada             1.80
    1  Ada            25.00
    1  Ada            42.00
    2  Grace           3.50
    2  Grace          12.99
    3  Edsger          9.99
    4  Barbara            -
    5  Donald        120.00
total per customer (reduce_by_key + join + sort_by_key):
    1  Ada            68.80
    2  Grace          16.49
    3  Edsger          9.99
    5  Donald        120.00
WANT
if cmp -s "$T/join.got" "$T/join.want"; then ok "join prints the expected rows"
else bad "join output differs: $(diff "$T/join.want" "$T/join.got" | head -5 | tr '\n' ' ')"; fi
# pi: the same samples land inside the circle however many threads draw
# them, and the estimate is near pi.
expect "pi on local[1]" 0 "" "$EX/pi" 20000 4 'local[1]'
in1=$(sed -n 's/^inside the circle: //p' "$T/out")
expect "pi on local[2]" 0 "" "$EX/pi" 20000 4 'local[2]'
in2=$(sed -n 's/^inside the circle: //p' "$T/out")
if [ -n "$in1" ] && [ "$in1" = "$in2" ] && [ "$in1" -gt 15200 ] && [ "$in1" -lt 16200 ]; then
    ok "pi: $in1 of 20000 inside on local[1] and local[2]"
else
    bad "pi: inside the circle $in1 on local[1], $in2 on local[2] (want equal, 15200..16200 of 20000)"
fi
# The programs linked against libember.so (make test builds them in
# BUILD/shared) print what the static ones print.
if [ -x "$BUILD/shared/wordcount" ] && [ -x "$BUILD/shared/logreg" ]; then
    "$EX/wordcount" tests/data/words.txt 3 'local[2]' > "$T/static.out" 2> "$T/err"
    LD_LIBRARY_PATH=$BUILD "$BUILD/shared/wordcount" tests/data/words.txt 3 'local[2]' > "$T/shared.out" 2>> "$T/err"
    if [ -s "$T/static.out" ] && cmp -s "$T/static.out" "$T/shared.out"; then ok "wordcount linked against libember.so prints the same"
    else bad "wordcount linked against libember.so prints otherwise"; fi
    "$EX/logreg" --lbfgs --l2 0.001 --master 'local[2]' 2> "$T/err" | grep '^training metrics' > "$T/static.out"
    LD_LIBRARY_PATH=$BUILD "$BUILD/shared/logreg" --lbfgs --l2 0.001 --master 'local[2]' 2>> "$T/err" |
        grep '^training metrics' > "$T/shared.out"
    if [ -s "$T/static.out" ] && cmp -s "$T/static.out" "$T/shared.out"; then ok "logreg linked against libember.so trains the same model"
    else bad "logreg linked against libember.so: '$(cat "$T/shared.out")', static '$(cat "$T/static.out")'"; fi
else
    bad "no programs linked against libember.so in $BUILD/shared (make test builds them)"
fi

# Usage errors name the argument.
expect "wordcount TOP_N" 2 "TOP_N 'abc'" "$EX/wordcount" tests/data/words.txt abc
expect "wordcount no input" 2 "missing FILE_OR_DIR_OR_GLOB" "$EX/wordcount"
expect "pi SAMPLES" 2 "SAMPLES 'x'" "$EX/pi" x
expect "pi PARTITIONS" 2 "PARTITIONS '0'" "$EX/pi" 10 0
expect "join extra argument" 2 "unexpected argument 'b'" "$EX/join" local b

# logreg checks every option before reading data: the data file does not
# exist, yet the message is about the option.
expect "logreg --iters abc" 2 "--iters: 'abc' is not an integer" \
    "$EX/logreg" --libsvm /nonexistent/data.svm --iters abc
expect "logreg --label-col abc" 2 "--label-col: 'abc' is not an integer" \
    "$EX/logreg" --csv /nonexistent/data.csv --label-col abc
expect "logreg --step 0" 2 "--step: '0'" "$EX/logreg" --libsvm /nonexistent/data.svm --step 0
expect "logreg --l2 x" 2 "--l2: 'x'" "$EX/logreg" --libsvm /nonexistent/data.svm --l2 x
expect "logreg --synthetic 10x" 2 "--synthetic: '10x'" "$EX/logreg" --synthetic 10x
expect "logreg --iters without value" 2 "--iters needs a value" "$EX/logreg" --iters
expect "logreg two data sources" 2 "--libsvm: only one data source (--csv was given)" \
    "$EX/logreg" --csv a.csv --libsvm b.svm
expect "logreg --header without --csv" 2 "--header applies to --csv only" "$EX/logreg" --header
expect "logreg missing file" 1 "/nonexistent/data.svm" "$EX/logreg" --libsvm /nonexistent/data.svm
printf '1 1:1\n2 1:0.5\n' > "$T/labels.svm"
expect "logreg --classes 2, label 2" 1 "labels.svm:2: label '2' (labels must be 0 or 1" \
    "$EX/logreg" --libsvm "$T/labels.svm" --classes 2
printf '1 1:1\n-1 1:0.5\n' > "$T/labels.svm"
expect "logreg label -1 without --classes" 1 "labels.svm:2: label '-1' (labels must be integers 0 to 65535)" \
    "$EX/logreg" --libsvm "$T/labels.svm"
expect "logreg --classes 1" 2 "--classes: '1' is not an integer from 2 to 65536" "$EX/logreg" --classes 1
# Three classes inferred from the labels: the multinomial model, its
# confusion matrix; --classes 3 says the same.
expect "logreg iris (classes inferred)" 0 "classes: 3 (multinomial)" \
    "$EX/logreg" --csv tests/data/ml/iris.csv --header --lbfgs --master 'local[2]'
expect "logreg iris --classes 3" 0 "confusion matrix" \
    "$EX/logreg" --csv tests/data/ml/iris.csv --header --classes 3 --iters 5 --master 'local[2]'

# The master's source is named.
EMBER_MASTER=bogus expect "master from \$EMBER_MASTER" 1 'unsupported master URL "bogus" from $EMBER_MASTER' \
    "$EX/join"
expect "master argument" 1 "local[N] with N from 1 to 1024" "$EX/pi" 10 1 'local[0]'

# A failure after em_open leaves no scratch directory.
mkdir "$T/scratch"
for run in "wordcount:--conf ember.local.dir=$T/scratch /nonexistent/input" \
           "logreg:--conf ember.local.dir=$T/scratch --libsvm /nonexistent/input"; do
    ex=${run%%:*}
    # shellcheck disable=SC2086
    expect "$ex failure exit status" 1 "/nonexistent/input" "$EX/$ex" ${run#*:}
    if [ -n "$(ls -A "$T/scratch")" ]; then
        bad "$ex failure left $(ls -A "$T/scratch") in ember.local.dir"
        rm -rf "$T/scratch" && mkdir "$T/scratch"
    else
        ok "$ex failure leaves no scratch directory"
    fi
done

# The model logreg saves applies to raw rows: awk recomputes the training
# accuracy from the model file and the raw CSV (header skipped, label last).
expect "logreg --model" 0 "model written to $T/bc.model" \
    "$EX/logreg" --lbfgs --l2 0.001 --master 'local[2]' --model "$T/bc.model"
printed=$(sed -n 's/.*accuracy \([0-9.]*\)%.*/\1/p' "$T/out")
raw=$(awk -F, -v model="$T/bc.model" '
    BEGIN {
        while ((getline line < model) > 0) {
            split(line, f, " ")
            if (f[1] == "cols") cols = f[2]
            else if (f[1] == "intercept") b = f[2]
            else if (line ~ /^[-0-9]/) w[n++] = line + 0
        }
    }
    NR > 1 {
        m = b
        for (j = 0; j < cols; j++) m += w[j] * $(j + 1)
        correct += ((m >= 0) == ($(cols + 1) == 1))
        rows++
    }
    END { printf "%.2f", 100 * correct / rows }' tests/data/ml/breast_cancer.csv)
if [ -n "$printed" ] && [ "$printed" = "$raw" ]; then
    ok "saved model on raw rows: accuracy $raw% as trained"
else
    failed=$((failed + 1))
    echo "FAIL examples: saved model on raw rows: accuracy '$raw', logreg printed '$printed'"
fi

echo "examples: $passed passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
