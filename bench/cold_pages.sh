#!/usr/bin/env bash
# bench/cold_pages.sh: what a cold small-files epoch costs Shoal with each page
# store layout (worker.page_store: files, a file per page; blocks, slots of
# block files reused in place), beside direct S3 reads, in one run.
#
#   bench/cold_pages.sh [--rounds R] [--files N] [--cache-size SIZE] [--cache-fs here|ext4]
#
# s3rver behind the WAN emulator (bench/wan_proxy, 20 ms, 25 MB/s per
# connection, 200 MB/s in total), as in bench/run. Each round reads, for each
# contender, a dataset of N files of 110-150 KiB nobody has read (8 readers,
# whole files, random order); Shoal is `shoal up` with 2 workers started on an
# empty cache dir for that read, no prefetch. The contenders' order rotates
# round by round. CPU s/GB: loadgen's CPU plus `shoal up` and its workers'
# (s3rver and the emulator are the remote side), per GB read. With
# --cache-size smaller than a dataset (80 MB), the epoch also evicts. With
# --cache-fs ext4 the caches sit on a journaled ext4 made for the run (a loop
# mount; services.sh, cache_fs_dir) instead of under the work dir.
# Prints a markdown table of medians and the ratios to direct.
{
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=3
FILES=600
SHOAL_CACHE_SIZE=4GiB
CACHE_FS=here
while (($#)); do
  case $1 in
    --rounds) ROUNDS=$2; shift ;;
    --files) FILES=$2; shift ;;
    --cache-size) SHOAL_CACHE_SIZE=$2; shift ;;
    --cache-fs) CACHE_FS=$2; shift ;;
    *) echo "usage: bench/cold_pages.sh [--rounds R] [--files N] [--cache-size SIZE] [--cache-fs here|ext4]" >&2; exit 2 ;;
  esac
  shift
done
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
BIN="$BUILD_DIR/bench"
LG="$BIN/loadgen"
for p in "$LG" "$BIN/wan_proxy" "$BUILD_DIR/shoal"; do
  [[ -x $p ]] || { echo "bench/cold_pages.sh: $p is missing: ninja -C $BUILD_DIR shoal loadgen wan_proxy" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/shoal-coldpages.XXXXXX)
# shellcheck source=bench/services.sh
source "$ROOT/bench/services.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM
BUCKET=bench
DATA="$WORK/data"
RESULTS="$WORK/results.tsv"
: >"$RESULTS"
CONTENDERS=(direct files blocks)

CACHES=$(cache_fs_dir "$CACHE_FS")
start_s3rver "$WORK/s3rver" "$BUCKET"
for ((r = 1; r <= ROUNDS; r++)); do
  for c in "${CONTENDERS[@]}"; do
    "$LG" gen --root "$DATA" --prefix "$c$r" --count "$FILES" --min-size 110KiB --max-size 150KiB \
      --seed $((100 * r + ${#c})) --manifest "$WORK/$c$r.manifest" >&2
    upload "$DATA" "$c$r" "$S3_PORT" "$BUCKET"
  done
done
start_proxy PROXY "$S3_PORT"
log "s3rver 127.0.0.1:$S3_PORT behind wan_proxy 127.0.0.1:$PROXY_PORT; $ROUNDS rounds of $FILES files each"

# run CONTENDER ROUND: one cold epoch; appends "contender round mbps p99 cpu_s bytes" to $RESULTS.
run() {
  local c=$1 r=$2 spec cpu0=0 cpu1=0 out="$WORK/lg.out"
  if [[ $c == direct ]]; then
    spec="http:http://127.0.0.1:$PROXY_PORT/$BUCKET"
  else
    start_shoal "s3://$BUCKET/" 2 "$CACHES/cache-$c$r" --page-store "$c" ||
      { log "shoal up --page-store $c did not start: $(tail -3 "$WORK/shoal.log")"; return 1; }
    spec="shoal:$SHOAL_CONFIG:"
    cpu0=$(tree_cpu shoal)
  fi
  "$LG" run --manifest "$WORK/$c$r.manifest" --reader "$spec" --label "$c" --seed 100 --timeout 600 \
    --workload whole --readers 8 >"$out" 2>"$WORK/lg.err" || { log "$c round $r failed: $(tail -2 "$WORK/lg.err")"; return 1; }
  if [[ $c != direct ]]; then
    cpu1=$(tree_cpu shoal)
    stop_shoal
  fi
  awk -v c="$c" -v r="$r" -v d="$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN{print b - a}')" '/^result / {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      printf "%s\t%s\t%s\t%s\t%s\t%s\n", c, r, f["mbps"], f["p99_ms"], f["cpu_s"] + d, f["bytes"] }' "$out" >>"$RESULTS"
  log "round $r: $(tail -1 "$RESULTS")"
}

for ((r = 1; r <= ROUNDS; r++)); do
  n=${#CONTENDERS[@]}
  for ((k = 0; k < n; k++)); do run "${CONTENDERS[$(((k + r - 1) % n))]}" "$r"; done
done

median() {  # median CONTENDER COLUMN (3 mbps, 4 p99, 7 CPU s/GB)
  awk -F'\t' -v c="$1" -v col="$2" '$1==c { print (col == 7 ? $5 / ($6 / 1e9) : $col) }' "$RESULTS" |
    sort -g | awk '{v[NR]=$1} END {if (NR) printf "%.2f", (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'
}
per_round() {  # per_round CONTENDER: CPU s/GB of each round
  awk -F'\t' -v c="$1" '$1==c { printf "%s%.2f", sep, $5 / ($6 / 1e9); sep = ", " }' "$RESULTS"
}
echo "| contender | MB/s | p99 ms | CPU s/GB (median; rounds) | MB/s / direct |"
echo "|---|---|---|---|---|"
D=$(median direct 3)
for c in "${CONTENDERS[@]}"; do
  m=$(median "$c" 3)
  printf '| %s | %s | %s | %s (%s) | %s |\n' "$c" "$m" "$(median "$c" 4)" "$(median "$c" 7)" "$(per_round "$c")" \
    "$(awk -v a="$m" -v b="$D" 'BEGIN{ if (b > 0) printf "%.2f", a / b }')"
done
echo
echo "cache dirs on: $(findmnt -no FSTYPE,OPTIONS --target "$CACHES") ($CACHE_FS)"
exit 0
}
