#!/bin/sh
# slurm.sh BUILD -- ember on a Slurm allocation, for real: a one-node Slurm
# on this machine (munged, slurmctld and slurmd started here by PID, with a
# munge key, a slurm.conf, ports and state directories of their own in a
# temporary directory; Debian's slurm-wlm and munge installed with apt-get
# when missing), then
# - the sbatch script of docs/cluster.md (section "Slurm"), as written there,
#   submitted with sbatch over the word count of tests/data/words.txt: its
#   output equals a local run's, and the job leaves no process and no
#   directory;
# - a job running scripts/ember-slurm.sh over examples/pi with far more
#   samples than it can finish, cancelled with scancel once its master,
#   worker and executor run: every process of the job ends, no port they
#   listened on is left, and every directory they had is removed; while it
#   ran, the secret files were 0600 in 0700 directories;
# - ember-submit --master slurm outside an allocation says so and exits 2.
# The job's directories go to a TMPDIR of the test's own, so it sees them.
# Then slurmd, slurmctld and munged are stopped by PID and the temporary
# directory removed.  Where Slurm cannot be installed or started, it prints
# "skip: REASON" and exits 0.  Its last line is "slurm: N passed, N failed".
set -u
B="$1"
root=$(pwd)
case "$B" in /*) ;; *) B="$root/$B" ;; esac
T=$(mktemp -d /tmp/ember-slurmt-XXXXXX)
chmod 755 "$T"
daemons=""
jobs=""
# stop PID...: SIGTERM, up to 10 s, then SIGKILL; each process by its PID.
stop() {
    for p in "$@"; do kill -TERM "$p" 2> /dev/null; done
    for p in "$@"; do
        k=0
        while kill -0 "$p" 2> /dev/null && [ $k -lt 100 ]; do sleep 0.1; k=$((k + 1)); done
        kill -KILL "$p" 2> /dev/null
        wait "$p" 2> /dev/null
    done
}
cleanup() {
    for j in $jobs; do scancel "$j" 2> /dev/null; done
    # A cancelled job's steps get KillWait (5 s) to end.
    [ -n "$jobs" ] && for k in $(seq 1 100); do
        [ -z "$(squeue -h -o %i 2> /dev/null)" ] && break
        sleep 0.1
    done
    # slurmd first (it ends its steps), then slurmctld, then munged.
    for p in $daemons; do stop "$p"; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

skip() {
    echo "skip: $1"
    exit 0
}
npass=0
nfail=0
check() {
    if eval "$2"; then
        echo "ok   slurm: $1"
        npass=$((npass + 1))
    else
        echo "FAIL slurm: $1"
        nfail=$((nfail + 1))
    fi
}

# Debian's Slurm and munge, when missing.
if ! command -v slurmctld > /dev/null 2>&1 || ! command -v slurmd > /dev/null 2>&1 ||
   ! command -v munged > /dev/null 2>&1 || ! command -v sbatch > /dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || skip "slurm-wlm and munge are not installed, and installing them needs root"
    command -v apt-get > /dev/null 2>&1 || skip "slurm-wlm and munge are not installed, and there is no apt-get"
    echo "slurm: installing slurm-wlm and munge"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge; } \
        > "$T/apt.log" 2>&1 || skip "apt-get install slurm-wlm munge failed: $(tail -n 3 "$T/apt.log")"
fi
[ "$(id -u)" = 0 ] || skip "a private slurmd runs jobs as root only: run as root"

# Two free ports for slurmctld and slurmd.
free_port() {
    p=$1
    while [ -n "$(ss -ltnH "sport = :$p" 2> /dev/null)" ] || [ "$p" = "${2:-}" ]; do p=$((p + 1)); done
    echo "$p"
}
base=$((20000 + $$ % 20000))
cport=$(free_port "$base")
dport=$(free_port $((cport + 1)) "$cport")

mkdir -p "$T/munge" "$T/ctld" "$T/spool" "$T/log" "$T/tree" "$T/nodetmp"
chmod 700 "$T/munge"
dd if=/dev/urandom bs=1024 count=1 of="$T/munge/munge.key" 2> /dev/null
chmod 400 "$T/munge/munge.key"
munged -F --force -S "$T/munge/sock" --key-file "$T/munge/munge.key" --pid-file "$T/munge/munged.pid" \
    --log-file "$T/log/munged.log" --seed-file "$T/munge/seed" > "$T/log/munged.out" 2>&1 &
munge_pid=$!
for k in $(seq 1 100); do [ -S "$T/munge/sock" ] && break; sleep 0.1; done
[ -S "$T/munge/sock" ] || skip "munged did not start: $(tail -n 3 "$T/log/munged.out" "$T/log/munged.log" 2> /dev/null)"
daemons="$munge_pid"

nodeline=$(slurmd -C 2> /dev/null | grep '^NodeName=')
node=$(printf '%s\n' "$nodeline" | sed 's/^NodeName=\([^ ]*\).*/\1/')
[ -n "$node" ] || skip "slurmd -C does not describe this machine"
: > "$T/plugstack.conf"
cat > "$T/slurm.conf" << EOF
ClusterName=embertest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$cport
SlurmdPort=$dport
AuthType=auth/munge
AuthInfo=socket=$T/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/ctld
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
PlugStackConfig=$T/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
KillWait=5
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
$nodeline NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=ember Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
SLURM_CONF="$T/slurm.conf"
export SLURM_CONF
# Nothing of an enclosing job or of another ember reaches the jobs.
for v in $(env | sed -n 's/^\(SLURM_[A-Z_]*\)=.*/\1/p'); do [ "$v" = SLURM_CONF ] || unset "$v"; done
unset EMBER_MASTER EMBER_CONF EMBER_SECRET_FILE EMBER_BIN_DIR EMBER_LOG_DIR EMBER_CONF_DIR || true

slurmctld -D -f "$T/slurm.conf" > "$T/log/slurmctld.out" 2>&1 &
ctld_pid=$!
daemons="$ctld_pid $daemons"
slurmd -D -N "$node" -f "$T/slurm.conf" > "$T/log/slurmd.out" 2>&1 &
slurmd_pid=$!
daemons="$slurmd_pid $daemons"
state=""
for k in $(seq 1 300); do
    state=$(sinfo -h -n "$node" -o %t 2> /dev/null)
    [ "$state" = idle ] && break
    kill -0 "$ctld_pid" 2> /dev/null && kill -0 "$slurmd_pid" 2> /dev/null || break
    sleep 0.1
done
[ "$state" = idle ] || skip "the one-node Slurm did not come up (node state '$state'): $(tail -n 3 "$T/log/slurmctld.log" "$T/log/slurmd.log" 2> /dev/null)"
echo "slurm: slurmctld (process $ctld_pid, port $cport), slurmd (process $slurmd_pid, port $dport), munged (process $munge_pid), node $node idle"

# The job's files as a user's source tree has them.
ln -s "$root/scripts" "$T/tree/scripts"
ln -s "$root/tests" "$T/tree/tests"
ln -s "$B" "$T/tree/build"
awk '/^`wordcount.sbatch`/ { f = 1 } f && /^```sh$/ { p = 1; next } p && /^```$/ { exit } p' \
    "$root/docs/cluster.md" > "$T/tree/wordcount.sbatch"
check "docs/cluster.md has the sbatch script" 'head -n 1 "$T/tree/wordcount.sbatch" | grep -q "^#!/bin/sh"'

# job_pids JOB: the processes of the job (their environment names it, or
# they run a binary from the jobs' directories): to look at, never to kill.
job_pids() {
    for d in /proc/[0-9]*; do
        p=${d#/proc/}
        [ "$p" = $$ ] && continue
        if tr '\0' '\n' 2> /dev/null < "$d/environ" | grep -qx "SLURM_JOB_ID=$1"; then echo "$p"; continue; fi
        case "$(readlink "$d/exe" 2> /dev/null)" in "$T/nodetmp/"*) echo "$p" ;; esac
    done
}
# alive PID...: those still running (not ended, not a zombie).
alive() {
    for p in "$@"; do
        [ -e "/proc/$p" ] || continue
        [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$p/stat" 2> /dev/null)" = Z ] && continue
        echo "$p"
    done
}
# finished JOB: waits up to 120 s for the job to leave the queue.
finished() {
    for k in $(seq 1 1200); do
        [ -z "$(squeue -h -j "$1" -o %i 2> /dev/null)" ] && return 0
        sleep 0.1
    done
    return 1
}
jobstate() { scontrol show job "$1" 2> /dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
submit() { (cd "$T/tree" && TMPDIR="$T/nodetmp" sbatch --parsable "$@" 2> "$T/sbatch.err"); }

# The word count, with the script of docs/cluster.md on this one node.
want=$("$B/examples/wordcount" tests/data/words.txt 3 'local[2]' 2> /dev/null | grep -v '^word ')
j1=$(submit --nodes=1 -o "$T/wc.out" -e "$T/wc.err" wordcount.sbatch tests/data/words.txt 3)
jobs="$jobs $j1"
check "sbatch takes the script (job ${j1:-none})" '[ -n "$j1" ]'
[ -n "$j1" ] || cat "$T/sbatch.err"
finished "$j1"
check "the job completed" '[ "$(jobstate "$j1")" = COMPLETED ]'
got=$(grep -v '^word ' "$T/wc.out" 2> /dev/null)
check "its word count equals the local run's" '[ -n "$got" ] && [ "$got" = "$want" ] && grep -q "^total words: 810, distinct words: 297$" "$T/wc.out"'
[ -n "$got" ] && [ "$got" = "$want" ] || { echo "  want: $want"; echo "  got:  $got"; cat "$T/wc.err"; tail -n 20 "$T/log/slurmd.log"; }
check "a master and 1 worker ran on 127.0.0.1" 'grep -q "^ember-slurm.sh: master ember://127.0.0.1:[0-9]*, 1 workers registered (job $j1)$" "$T/wc.err"'
for k in $(seq 1 100); do [ -z "$(job_pids "$j1")" ] && break; sleep 0.1; done
check "the job left no process" '[ -z "$(job_pids "$j1")" ]'
check "the job left no directory" '[ -z "$(ls -A "$T/nodetmp")" ]'

# A job cancelled while its application runs.
cat > "$T/tree/pi.sbatch" << 'EOF'
#!/bin/sh
#SBATCH --nodes=1
#SBATCH --cpus-per-task=2
#SBATCH --mem=1G
scripts/ember-slurm.sh --executor-memory 512m build/examples/pi 100000000000 4
EOF
j2=$(submit -o "$T/pi.out" -e "$T/pi.err" pi.sbatch)
jobs="$jobs $j2"
up=""
for k in $(seq 1 600); do
    m="" w="" e=""
    for p in $(job_pids "$j2"); do
        case "$(readlink "/proc/$p/exe" 2> /dev/null)" in
        */ember-master) m=$p ;;
        */ember-worker) w=$p ;;
        "$T/nodetmp/"*) e=$p ;;
        esac
    done
    if [ -n "$m" ] && [ -n "$w" ] && [ -n "$e" ]; then up=1; break; fi
    sleep 0.1
done
check "the job's master, worker and executor run (processes $m, $w, $e)" '[ -n "$up" ]'
[ -n "$up" ] || { cat "$T/pi.err"; find "$T/nodetmp" -name '*.out' -exec tail -n 5 {} \;; }
pids=$(job_pids "$j2")
ports=""
for p in $pids; do
    ports="$ports $(ss -ltnpH 2> /dev/null | grep "pid=$p," | awk '{ n = split($4, a, ":"); print a[n] }')"
done
ports=$(echo $(printf '%s\n' $ports | sort -un))
check "they listen (ports $ports)" '[ -n "$ports" ]'
check "the secret files are 0600 in 0700 directories" \
    '[ -n "$(find "$T/nodetmp" -name secret)" ] &&
     [ -z "$(find "$T/nodetmp" -name secret ! -perm 600)" ] &&
     [ -z "$(find "$T/nodetmp" -mindepth 1 -maxdepth 1 -type d ! -perm 700)" ]'
scancel "$j2"
finished "$j2"
check "scancel cancelled the job" '[ "$(jobstate "$j2")" = CANCELLED ]'
# The job's processes end within KillWait of the cancel; up to 10 s more.
for k in $(seq 1 100); do
    [ -z "$(alive $pids)" ] && [ -z "$(job_pids "$j2")" ] && break
    sleep 0.1
done
check "no process of the job is left (of $(echo $pids | wc -w) seen)" \
    '[ -z "$(alive $pids)" ] && [ -z "$(job_pids "$j2")" ] && [ -z "$(pgrep -f "$T/(tree|nodetmp)/")" ]'
[ -z "$(alive $pids)" ] && [ -z "$(job_pids "$j2")" ] && [ -z "$(pgrep -f "$T/(tree|nodetmp)/")" ] ||
    ps -o pid,stat,args -p "$(echo $(alive $pids) $(job_pids "$j2") $(pgrep -f "$T/(tree|nodetmp)/") | tr ' ' ,)"
left=""
for port in $ports; do [ -n "$(ss -ltnH "sport = :$port")" ] && left="$left $port"; done
check "no port of the job is left" '[ -z "$left" ]'
check "no directory of the job is left" '[ -z "$(ls -A "$T/nodetmp")" ]'
[ -z "$(ls -A "$T/nodetmp")" ] || ls -lR "$T/nodetmp"

err=$(env -u SLURM_JOB_ID "$root/scripts/ember-submit" --master slurm "$B/examples/pi" 2>&1)
rc=$?
check "ember-submit --master slurm outside an allocation says so and exits 2" \
    '[ "$rc" = 2 ] && case "$err" in *"not inside a Slurm allocation"*) true ;; *) false ;; esac'

# Slurm's own daemons, by PID.
stop $daemons
daemons=""
check "slurmd, slurmctld and munged stopped" '[ -z "$(alive $slurmd_pid $ctld_pid $munge_pid)" ]'
check "their ports are closed" '[ -z "$(ss -ltnH "sport = :$cport")" ] && [ -z "$(ss -ltnH "sport = :$dport")" ]'
echo "slurm: $npass passed, $nfail failed"
[ "$nfail" = 0 ]
