#!/usr/bin/env bash
# bench/shards_bench.sh: large warm shards read by the native client through
# the short circuit, beside the page cache (plain pread of the same files), in
# one run (issue 31 item 8). The "Large shards" rows of bench/run, on their own
# and with more bytes per measurement: bench/run's quick epoch (3 shards) lasts
# a few tens of milliseconds here, too short to tell one change from noise.
#
#   bench/shards_bench.sh [--rounds R] [--shards N] [--epochs E] [--readers K] [--before DIR]
#                         [--profile DIR]
#
# N shards of 64 MiB of random bytes in s3rver behind the WAN emulator; a
# `shoal up` of 2 workers reads them once (cold, every byte checked), then
# each round runs, in an order rotated round by round: the page cache
# (loadgen posix:), Shoal (loadgen shoal:, short circuit on), and with
# --before DIR a second cluster started from DIR/shoal read by DIR/loadgen
# (another build, e.g. main's, so that before and after run in the same
# minutes). Each run is E epochs of K readers, each reading whole shards in a
# random order (bench/run's `--workload seq`); every byte is checked in the
# first epoch, which is not counted. Per contender: the median over rounds of the run's MB/s (all
# epochs' bytes over their time), the median of Shoal/page cache per round,
# and CPU seconds per GB (loadgen plus the cluster's processes). --profile
# DIR: after the rounds, each Shoal contender's run once more under
# `perf record -g` (DIR/CONTENDER.perf) and once under `strace -c -f`
# (DIR/CONTENDER.strace), the reader's side only.
{
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=5
SHARDS=8
EPOCHS=6
READERS=4
BEFORE=""
PROFILE=""
usage() {
  echo "usage: bench/shards_bench.sh [--rounds R] [--shards N] [--epochs E] [--readers K] [--before DIR] [--profile DIR]" >&2
  exit 2
}
while (($#)); do
  case $1 in
    --rounds) ROUNDS=$2; shift ;;
    --shards) SHARDS=$2; shift ;;
    --epochs) EPOCHS=$2; shift ;;
    --readers) READERS=$2; shift ;;
    --before) BEFORE=$(cd "$2" && pwd); shift ;;
    --profile) mkdir -p "$2"; PROFILE=$(cd "$2" && pwd); shift ;;
    -h|--help) usage ;;
    *) usage ;;
  esac
  shift
done
if [[ -n $BEFORE && ( ! -x $BEFORE/shoal || ! -x $BEFORE/loadgen ) ]]; then
  echo "bench/shards_bench.sh: --before $BEFORE must hold the other build's shoal and loadgen binaries" >&2
  exit 2
fi
# shellcheck source=bench/standalone.sh
source "$ROOT/bench/standalone.sh" shardsbench
SHOAL_CACHE_SIZE=4GiB

"$LG" gen --root "$DATA" --prefix large --count "$SHARDS" --min-size 64MiB --max-size 64MiB --seed 31 \
  --manifest "$WORK/large.manifest" >&2
start_s3rver "$WORK/s3rver" bench
upload "$DATA" large "$S3_PORT" bench
start_proxy PROXY "$S3_PORT"  # the WAN: 20 ms, 25 MB/s/conn, 200 MB/s total

declare -A SPEC LOADGEN DAEMON
SPEC[pagecache]="posix:$DATA"; LOADGEN[pagecache]=$LG; DAEMON[pagecache]=""
SHOAL_NAME=after start_shoal "s3://bench/" 2 "$WORK/cache-after" || { log "shoal up did not start"; exit 1; }
SPEC[after]="shoal:$SHOAL_CONFIG:"; LOADGEN[after]=$LG; DAEMON[after]=after
CONTENDERS=(pagecache after)
if [[ -n $BEFORE ]]; then
  SHOAL_NAME=before SHOAL_BIN="$BEFORE/shoal" start_shoal "s3://bench/" 2 "$WORK/cache-before" ||
    { log "the --before shoal up did not start"; exit 1; }
  SPEC[before]="shoal:$SHOAL_CONFIG:"; LOADGEN[before]="$BEFORE/loadgen"; DAEMON[before]=before
  CONTENDERS+=(before)
fi

# run CONTENDER ROUND EPOCHS VERIFY: one loadgen run; appends "contender round mbps cpu_s bytes" to $RESULTS.
run() {
  local c=$1 round=$2 epochs=$3 verify=$4 out="$WORK/lg.out" cpu0 cpu1
  # shellcheck disable=SC2086  # an empty DAEMON is no name
  cpu0=$(tree_cpu ${DAEMON[$c]})
  "${LOADGEN[$c]}" run --manifest "$WORK/large.manifest" --reader "${SPEC[$c]}" --label "$c" --seed "$round" \
    --workload seq --readers "$READERS" --epochs "$epochs" --verify "$verify" --timeout 600 >"$out" 2>"$WORK/lg.err" ||
    { log "$c round $round failed: $(head -3 "$WORK/lg.err")"; exit 1; }
  # shellcheck disable=SC2086
  cpu1=$(tree_cpu ${DAEMON[$c]})
  # The first epoch, which hashes every byte, is not counted; the clusters'
  # CPU over the run is shared out by epochs.
  awk -v c="$c" -v r="$round" -v e="$epochs" -v d="$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN{print b - a}')" '
    /^result / {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      if (f["epoch"] > 1) { bytes += f["bytes"]; secs += f["secs"]; cpu += f["cpu_s"] }
    }
    END { printf "%s\t%s\t%.1f\t%.3f\t%d\n", c, r, bytes / secs / 1e6, cpu + d * (e - 1) / e, bytes }' "$out" \
    >>"$RESULTS"
}

log "cold epoch through each cluster (every byte checked)"
for c in "${CONTENDERS[@]}"; do
  [[ $c == pagecache ]] || run "$c" 0 2 all
done
: >"$RESULTS"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= ROUNDS; r++)); do
  n=${#CONTENDERS[@]}
  for ((i = 0; i < n; i++)); do
    c=${CONTENDERS[$(((i + r) % n))]}
    run "$c" "$r" "$EPOCHS" first
    log "round $r: $c $(awk -F'\t' -v c="$c" -v r="$r" '$1==c && $2==r {print $3 " MB/s"}' "$RESULTS")"
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
if [[ -n $PROFILE ]]; then
  for c in "${CONTENDERS[@]}"; do
    [[ $c != pagecache ]] || continue
    args=(run --manifest "$WORK/large.manifest" --reader "${SPEC[$c]}" --label "$c" --seed 99 --workload seq
      --readers "$READERS" --epochs "$EPOCHS" --verify none --timeout 600)
    perf record -g -o "$PROFILE/$c.perf" -- "${LOADGEN[$c]}" "${args[@]}" >"$PROFILE/$c.perf.out" 2>"$PROFILE/$c.perf.err" ||
      log "perf record of $c failed: $(tail -2 "$PROFILE/$c.perf.err")"
    strace -c -f -o "$PROFILE/$c.strace" -- "${LOADGEN[$c]}" "${args[@]}" >"$PROFILE/$c.strace.out" 2>&1 ||
      log "strace of $c failed: $(tail -2 "$PROFILE/$c.strace.out")"
  done
  log "profiles in $PROFILE"
fi

median() { sort -g | awk '{v[NR]=$1} END {if (NR) printf "%.2f", NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
col() { awk -F'\t' -v c="$1" -v k="$2" '$1==c { if (k == "cpu") print $4 / ($5 / 1e9); else print $3 }' "$RESULTS"; }
ratio() {  # per-round $1 / pagecache
  awk -F'\t' -v c="$1" '$1=="pagecache" {p[$2]=$3} $1==c {s[$2]=$3} END {for (r in s) if (p[r] > 0) print s[r] / p[r]}' \
    "$RESULTS"
}
per_round() { awk -F'\t' -v c="$1" '$1==c {printf "%s%.0f", n++ ? ", " : "", $3}' "$RESULTS"; }

echo "| contender | MB/s (median) | per round | / page cache (median of rounds) | CPU s/GB |"
echo "|---|---|---|---|---|"
for c in "${CONTENDERS[@]}"; do
  case $c in
    pagecache) name="page cache (limit)"; rat="1.00" ;;
    after) name="Shoal short circuit (this build)"; rat=$(ratio after | median) ;;
    before) name="Shoal short circuit (--before build)"; rat=$(ratio before | median) ;;
  esac
  echo "| $name | $(col "$c" mbps | median) | $(per_round "$c") | $rat | $(col "$c" cpu | median) |"
done
echo
echo "$SHARDS shards of 64 MiB, $READERS readers, $EPOCHS epochs per run, $ROUNDS rounds interleaved; $(nproc) cores," \
  "$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), Linux $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC');" \
  "load average $LOAD_BEFORE before, $LOAD_AFTER after"
exit 0
}
