#!/usr/bin/env bash
# bench/load_bench.sh: `shoal load` of the small-files dataset against one
# epoch of direct reads of it, both from s3rver behind the WAN emulator
# (20 ms, 25 MB/s per connection, 200 MB/s in all).
#
#   bench/load_bench.sh [--rounds R] [--small-n N] [--workers W] [--readers R] [--cache-fs here|ext4]
#
# Direct: loadgen reads every object whole with R readers (the small-files
# epoch of bench/run). Load: `shoal load -r` over a W-worker `shoal up` after
# `shoal free -r`, each worker with R fetches in flight (--concurrency R: as
# concurrent as the one direct client), and once more with R in flight across
# the whole cluster (--concurrency ceil(R/W)), and at its default parallelism.
# Beside them, what a user would otherwise run to stage the dataset into a
# local directory from the same store (issue 31 item 6): `aws s3 sync` (its
# default 10 concurrent requests) and `rclone copy --transfers 16`. Prints a
# Markdown table of medians over the rounds, with MB/s against the emulator's
# 200 MB/s in all.
{
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=3
SMALL_N=2000
CACHE_FS=here  # or ext4: the cache on a journaled ext4 made for the run (bench/services.sh, cache_fs_dir)
WORKERS=3
READERS=8
while (($#)); do
  case $1 in
    --rounds) ROUNDS=$2; shift ;;
    --small-n) SMALL_N=$2; shift ;;
    --workers) WORKERS=$2; shift ;;
    --readers) READERS=$2; shift ;;
    --cache-fs) CACHE_FS=$2; shift ;;
    *) echo "usage: bench/load_bench.sh [--rounds R] [--small-n N] [--workers W] [--readers R] [--cache-fs here|ext4]" >&2; exit 2 ;;
  esac
  shift
done
# shellcheck source=bench/standalone.sh
source "$ROOT/bench/standalone.sh" loadbench
SHOAL_CACHE_SIZE=${SHOAL_CACHE_SIZE:-4GiB}

"$LG" gen --root "$DATA" --prefix small --count "$SMALL_N" --min-size 110KiB --max-size 150KiB --seed 11 \
  --manifest "$WORK/small.manifest" >&2
start_s3rver "$WORK/s3rver" bench
upload "$DATA" small "$S3_PORT" bench
start_proxy PROXY "$S3_PORT"  # the WAN: 20 ms, 25 MB/s/conn, 200 MB/s total
CACHES=$(cache_fs_dir "$CACHE_FS")
start_shoal "s3://bench/" "$WORKERS" "$CACHES/cache"
log "s3rver behind wan_proxy 127.0.0.1:$PROXY_PORT; shoal up with $WORKERS workers ($SHOAL_CONFIG)"

now() { date +%s.%N; }
# load ROW CONCURRENCY ROUND: frees the dataset, then times `shoal load` of it.
load() {
  local row=$1 conc=$2 round=$3 t0 t1
  "$BUILD_DIR/shoal" free /data/small -r -c "$SHOAL_CONFIG" >>"$WORK/free.log"
  t0=$(now)
  "$BUILD_DIR/shoal" load /data/small -r ${conc:+--concurrency "$conc"} --json -c "$SHOAL_CONFIG" >"$WORK/load.out" \
    2>"$WORK/load.err" || { log "load round $round failed: $(tail -1 "$WORK/load.err")"; return 1; }
  t1=$(now)
  local files
  files=$(tail -1 "$WORK/load.out" | sed -n 's/.*"files_done":\([0-9]*\).*/\1/p')
  [[ $files == "$SMALL_N" ]] || { log "load round $round loaded $files of $SMALL_N files"; return 1; }
  awk -v row="$row" -v n="$SMALL_N" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s\t%.3f\t%.1f\n", row, b - a, n / (b - a) }' \
    >>"$RESULTS"
}
# stage ROW ROUND: a user's staging tool copies the dataset into an empty local directory.
stage() {
  local row=$1 round=$2 t0 t1 dest="$WORK/stage-$1"
  rm -rf "$dest"
  mkdir -p "$dest"
  t0=$(now)
  case $row in
    aws_sync)
      env AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null \
        AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true AWS_PAGER="" \
        aws --endpoint-url "http://127.0.0.1:$PROXY_PORT" s3 sync s3://bench/small "$dest" --only-show-errors \
        >>"$WORK/stage.log" 2>&1 || { log "aws s3 sync round $round failed: $(tail -3 "$WORK/stage.log")"; return 1; }
      ;;
    rclone_copy)
      env -u AWS_CA_BUNDLE RCLONE_CONFIG="$WORK/rclone.conf" RCLONE_S3_PROVIDER=Other \
        RCLONE_S3_ENDPOINT="http://127.0.0.1:$PROXY_PORT" RCLONE_S3_ACCESS_KEY_ID=S3RVER \
        RCLONE_S3_SECRET_ACCESS_KEY=S3RVER RCLONE_S3_FORCE_PATH_STYLE=true RCLONE_S3_ENV_AUTH=false \
        rclone copy :s3:bench/small "$dest" --transfers 16 >>"$WORK/stage.log" 2>&1 ||
        { log "rclone copy round $round failed: $(tail -3 "$WORK/stage.log")"; return 1; }
      ;;
  esac
  t1=$(now)
  local files
  files=$(find "$dest" -type f | wc -l)
  [[ $files == "$SMALL_N" ]] || { log "$row round $round copied $files of $SMALL_N files"; return 1; }
  awk -v row="$row" -v n="$SMALL_N" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s\t%.3f\t%.1f\n", row, b - a, n / (b - a) }' \
    >>"$RESULTS"
  rm -rf "$dest"
}
direct() {  # direct ROW READERS ROUND
  local row=$1 readers=$2 round=$3
  "$LG" run --manifest "$WORK/small.manifest" --reader "http:http://127.0.0.1:$PROXY_PORT/bench" --label direct \
    --seed "$round" --timeout 900 --workload whole --readers "$readers" >"$WORK/lg.out" 2>"$WORK/lg.err" ||
    { log "direct round $round failed: $(head -3 "$WORK/lg.err")"; return 1; }
  awk -v n="$SMALL_N" -v row="$row" '/^result / { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    printf "%s\t%.3f\t%s\n", row, n / f["ops_per_s"], f["ops_per_s"] }' "$WORK/lg.out" >>"$RESULTS"
}
PER_WORKER=$READERS
UFS_THREADS=16  # worker.ufs_threads' default: `shoal load`'s default fetches in flight per worker
SPREAD=$(((READERS + WORKERS - 1) / WORKERS))
for ((r = 1; r <= ROUNDS; r++)); do
  log "round $r/$ROUNDS"
  direct direct "$READERS" "$r"
  direct direct_wide "$((READERS * WORKERS))" "$r"
  direct direct_default "$((UFS_THREADS * WORKERS))" "$r"
  load per_worker "$PER_WORKER" "$r"
  load spread "$SPREAD" "$r"
  load default "" "$r"
  stage aws_sync "$r"
  stage rclone_copy "$r"
done

median() {  # median ROW COLUMN(2=seconds 3=files/s)
  awk -F'\t' -v row="$1" -v col="$2" '$1==row {print $col}' "$RESULTS" | sort -g |
    awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
DS=$(median direct 2); DF=$(median direct 3)
WS=$(median direct_wide 2); WF=$(median direct_wide 3)
XS=$(median direct_default 2); XF=$(median direct_default 3)
PS=$(median per_worker 2); PF=$(median per_worker 3)
SS=$(median spread 2); SF=$(median spread 3)
FS=$(median default 2); FF=$(median default 3)
AS=$(median aws_sync 2); AF=$(median aws_sync 3)
RS=$(median rclone_copy 2); RF=$(median rclone_copy 3)
BYTES=$(awk -F'\t' 'NR>1 {s += $2} END {printf "%d", s}' "$WORK/small.manifest")
mbps() { awk -v b="$BYTES" -v s="$1" 'BEGIN { if (s > 0) printf "%.1f", b / s / 1e6; else print "-" }'; }
# The faster staging tool: the one a user would pick.
BEST=$(awk -v a="$AS" -v r="$RS" 'BEGIN { print (a <= r ? a : r) }')
echo "| $SMALL_N objects of 110-150 KiB ($(awk -v b="$BYTES" 'BEGIN {printf "%.0f", b / 1e6}') MB) from S3 over the WAN emulator | seconds | files/s | MB/s (/ 200 MB/s cap) | speed-up over direct | over the faster staging tool |"
echo "|---|---|---|---|---|---|"
row() {  # row LABEL SECONDS FILES/S
  echo "| $1 | $2 | $3 | $(mbps "$2") ($(ratio "$(mbps "$2")" 200)) | $(ratio "$DS" "$2") | $(ratio "$BEST" "$2") |"
}
row "direct: one epoch, $READERS readers" "$DS" "$DF"
row "direct: one epoch, $((READERS * WORKERS)) readers (what the store side allows)" "$WS" "$WF"
row "direct: one epoch, $((UFS_THREADS * WORKERS)) readers (s3rver alone at the load's default parallelism)" "$XS" "$XF"
row "\`aws s3 sync\` into a local directory (10 requests at once, its default)" "$AS" "$AF"
row "\`rclone copy --transfers 16\` into a local directory" "$RS" "$RF"
row "\`shoal load -r\`, $WORKERS workers x $PER_WORKER fetches in flight" "$PS" "$PF"
row "\`shoal load -r\`, $WORKERS workers x $SPREAD fetches in flight ($((WORKERS * SPREAD)) in all)" "$SS" "$SF"
row "\`shoal load -r\` at its default parallelism" "$FS" "$FF"
echo
echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); medians of $ROUNDS rounds; load timed from the command's start to its exit (listing, stats and fetches; the dataset freed before each load); cache on $(findmnt -no FSTYPE,OPTIONS --target "$CACHES") ($CACHE_FS); $(date -u '+%Y-%m-%d %H:%M UTC')"
exit 0
}
