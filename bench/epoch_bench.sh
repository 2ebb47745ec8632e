#!/usr/bin/env bash
# bench/epoch_bench.sh: issue 13's epoch experiment on a real cluster. The
# small-files dataset (110-150 KiB objects) in s3rver behind the WAN emulator;
# for each eviction policy a fresh `shoal up` whose workers together cache 2/3
# of the dataset, read for three epochs, each in a new random order (loadgen,
# every byte checked). What the store sent per epoch is counted at the WAN
# emulator; an epoch's hit ratio is 1 - store bytes / dataset bytes.
#
#   bench/epoch_bench.sh [--small-n N] [--epochs E] [--workers W] [--readers R]
#                        [--cache-fraction F] [--policies "lru fifo ..."]
#
# Prints a Markdown table: per policy, the hit ratio and store bytes of each
# epoch, and the mean over the epochs after the first (the steady state) against
# the ideal cache/dataset.
{
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SMALL_N=3000
EPOCHS=3
WORKERS=3
READERS=8
FRACTION=0.667
POLICIES="lru fifo lfu s3fifo sieve epoch"
usage() {
  echo "usage: bench/epoch_bench.sh [--small-n N] [--epochs E] [--workers W] [--readers R] [--cache-fraction F] [--policies LIST]" >&2
  exit 2
}
while (($#)); do
  case $1 in
    --small-n) SMALL_N=$2; shift ;;
    --epochs) EPOCHS=$2; shift ;;
    --workers) WORKERS=$2; shift ;;
    --readers) READERS=$2; shift ;;
    --cache-fraction) FRACTION=$2; shift ;;
    --policies) POLICIES=$2; shift ;;
    -h|--help) usage ;;
    *) usage ;;
  esac
  shift
done
((EPOCHS >= 2)) || { echo "bench/epoch_bench.sh: --epochs must be at least 2 (the first epoch is the cold one)" >&2; exit 2; }
# shellcheck source=bench/standalone.sh
source "$ROOT/bench/standalone.sh" epochbench

"$LG" gen --root "$DATA" --prefix small --count "$SMALL_N" --min-size 110KiB --max-size 150KiB --seed 13 \
  --manifest "$WORK/small.manifest" >&2
DATASET=$(awk -F'\t' 'NR>1 {s += $2} END {printf "%d", s}' "$WORK/small.manifest")
# The capacity also counts each page's header (well under 1% of a 130 KiB page),
# and the ring gives the workers unequal shares: the ideal is a little above
# what a cluster can reach.
PER_WORKER=$(awk -v d="$DATASET" -v f="$FRACTION" -v w="$WORKERS" 'BEGIN { printf "%d", d * f / w }')
log "dataset: $SMALL_N objects, $DATASET bytes; cache: $WORKERS x $PER_WORKER bytes ($FRACTION of the dataset)"
start_s3rver "$WORK/s3rver" bench
upload "$DATA" small "$S3_PORT" bench
start_proxy PROXY "$S3_PORT"  # the WAN: 20 ms, 25 MB/s/conn, 200 MB/s total

SHOAL_CACHE_SIZE=$PER_WORKER
for policy in $POLICIES; do
  rm -rf "$WORK/cache" "$WORK/shoal-state"
  start_shoal "s3://bench/" "$WORKERS" "$WORK/cache" --eviction "$policy" || { log "shoal up with --eviction $policy failed"; exit 1; }
  for ((e = 1; e <= EPOCHS; e++)); do
    b0=$(proxy_counter "$PROXY_STATS" bytes_down)
    "$LG" run --manifest "$WORK/small.manifest" --reader "shoal:$SHOAL_CONFIG:/data" --label "$policy" \
      --seed "$e" --timeout 1200 --workload whole --readers "$READERS" >"$WORK/lg.out" 2>"$WORK/lg.err" ||
      { log "$policy epoch $e failed: $(head -3 "$WORK/lg.err")"; exit 1; }
    b1=$(proxy_counter "$PROXY_STATS" bytes_down)
    mbps=$(awk '/^result / { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "mbps") print kv[2] } }' "$WORK/lg.out")
    printf '%s\t%d\t%d\t%s\n' "$policy" "$e" $((b1 - b0)) "$mbps" >>"$RESULTS"
    log "$policy epoch $e: store sent $((b1 - b0)) bytes, $mbps MB/s"
  done
  stop_shoal
done

# The table. Store bytes include S3's response headers (a few hundred bytes per
# GET), so an epoch served wholly from the store shows a hit ratio just below 0.
awk -F'\t' -v d="$DATASET" -v n="$EPOCHS" -v f="$FRACTION" -v pols="$POLICIES" '
  { bytes[$1, $2] = $3; mb[$1, $2] = $4 }
  END {
    printf "| policy |"
    for (e = 1; e <= n; e++) printf " epoch %d hit ratio (store MB) |", e
    printf " hit ratio, epochs 2-%d | / ideal (%.3f) |\n", n, f
    printf "|---|"; for (e = 1; e <= n + 2; e++) printf "---|"; printf "\n"
    np = split(pols, p, " ")
    for (i = 1; i <= np; i++) {
      printf "| %s |", p[i]; s = 0
      for (e = 1; e <= n; e++) {
        h = 1 - bytes[p[i], e] / d
        printf " %.3f (%.0f) |", h, bytes[p[i], e] / 1e6
        if (e > 1) s += h
      }
      m = s / (n - 1)
      printf " %.3f | %.2f |\n", m, m / f
    }
  }' "$RESULTS"
echo
echo "$SMALL_N objects of 110-150 KiB ($(awk -v d="$DATASET" 'BEGIN { printf "%.0f MB", d / 1e6 }')), $WORKERS workers caching $FRACTION of it in all, $READERS readers, $EPOCHS epochs each in a new random order; $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); $(date -u '+%Y-%m-%d %H:%M UTC')"
exit 0
}
