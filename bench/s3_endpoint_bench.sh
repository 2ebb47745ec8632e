#!/usr/bin/env bash
# bench/s3_endpoint_bench.sh: GETs through Shoal's S3 endpoint against nginx
# (sendfile) on the same bytes, and against direct S3 (s3rver behind the WAN
# emulator). Every byte read is checked by loadgen against its seed.
#
#   bench/s3_endpoint_bench.sh [--rounds R] [--large-n N] [--small-n N]
#
# Warm large objects (64 MiB, 4 readers, whole sequential GETs) and warm
# ~128 KiB objects (8 readers). The endpoint is `shoal s3` over a 2-worker
# `shoal up` on the same directory, its bucket public so that loadgen's plain
# HTTP reader can GET it (the only difference from a signed GET is one HMAC
# check per request). Prints a Markdown table of medians over the rounds.
#
# Then proxy mode against redirect mode (s3.mode): a 2-worker cluster whose
# workers serve S3 themselves (worker.s3_listen), every GET sent to worker 0,
# which owns about half of the objects: the other half it proxies from
# worker 1, or answers 307 to worker 1 (loadgen's reader follows it).
{
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=3
LARGE_N=4
SMALL_N=1500
while (($#)); do
  case $1 in
    --rounds) ROUNDS=$2; shift ;;
    --large-n) LARGE_N=$2; shift ;;
    --small-n) SMALL_N=$2; shift ;;
    *) echo "usage: bench/s3_endpoint_bench.sh [--rounds R] [--large-n N] [--small-n N]" >&2; exit 2 ;;
  esac
  shift
done
# shellcheck source=bench/standalone.sh
source "$ROOT/bench/standalone.sh" s3bench

"$LG" gen --root "$DATA" --prefix large --count "$LARGE_N" --min-size 64MiB --max-size 64MiB --seed 31 \
  --manifest "$WORK/large.manifest" >&2
"$LG" gen --root "$DATA" --prefix small --count "$SMALL_N" --min-size 110KiB --max-size 150KiB --seed 32 \
  --manifest "$WORK/small.manifest" >&2

start_nginx "$DATA"
start_s3rver "$WORK/s3rver" bench
upload "$DATA" small "$S3_PORT" bench
start_proxy PROXY "$S3_PORT"  # the WAN: 20 ms, 25 MB/s/conn, 200 MB/s total

bg shoal "$BUILD_DIR/shoal" up --ufs "$DATA" --workers 2 --cache-dir "$WORK/cache" --cache-size 4GiB \
  --state-dir "$WORK/state" --consistency immutable
line=$(wait_for_line "$WORK/shoal.log" '^ready: config=' 60 "$BG_PID")
CONFIG=${line#ready: config=}
{ cat "$CONFIG"; printf 's3:\n  public_buckets: [data]\n'; } >"$WORK/s3.yaml"
bg shoal_s3 "$BUILD_DIR/shoal" s3 --config "$WORK/s3.yaml"
line=$(wait_for_line "$WORK/shoal_s3.log" '^s3: endpoint=' 60 "$BG_PID")
S3_ENDPOINT=${line#s3: endpoint=}
log "nginx 127.0.0.1:$NGINX_PORT; shoal s3 $S3_ENDPOINT; direct (WAN) 127.0.0.1:$PROXY_PORT"

declare -A SPEC=([nginx]="http:http://127.0.0.1:$NGINX_PORT" [shoal_s3]="http:$S3_ENDPOINT/data"
  [direct]="http:http://127.0.0.1:$PROXY_PORT/bench")
run() {  # run CONTENDER ROW ROUND MANIFEST [flags]
  local c=$1 row=$2 round=$3 manifest=$4; shift 4
  "$LG" run --manifest "$manifest" --reader "${SPEC[$c]}" --label "$c" --seed "$round" --timeout 900 "$@" \
    >"$WORK/lg.out" 2>"$WORK/lg.err" || { log "$c $row round $round failed: $(head -3 "$WORK/lg.err")"; return 1; }
  awk -v row="$row" -v c="$c" '/^result / { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    printf "%s\t%s\t%s\t%s\n", row, c, f["mbps"], f["ops_per_s"] }' "$WORK/lg.out" >>"$RESULTS"
}
log "warming the cache through the endpoint"
run shoal_s3 warm 0 "$WORK/large.manifest" --workload whole --readers 4
run shoal_s3 warm 0 "$WORK/small.manifest" --workload whole --readers 8
log "direct S3 through the WAN emulator (small, one epoch)"
run direct small 1 "$WORK/small.manifest" --workload whole --readers 8
for ((r = 1; r <= ROUNDS; r++)); do
  log "round $r/$ROUNDS"
  for c in nginx shoal_s3; do
    run "$c" large "$r" "$WORK/large.manifest" --workload whole --readers 4
    run "$c" small "$r" "$WORK/small.manifest" --workload whole --readers 8
  done
done

# start_listen_cluster MODE: two `shoal worker`s with S3 listeners in MODE;
# sets LISTEN_S3 to worker 0's S3 endpoint (host:port).
start_listen_cluster() {
  local mode=$1 i line members=""
  cat >"$WORK/lw-$mode.yaml" <<YAML
mounts:
  - {path: /data, ufs: "file://$DATA/", consistency: immutable}
worker:
  s3_listen: 127.0.0.1:0
s3:
  public_buckets: [data]
  mode: $mode
  client_config: $WORK/lc-$mode.yaml
YAML
  for i in 0 1; do
    bg "lw-$mode-$i" "$BUILD_DIR/shoal" worker --config "$WORK/lw-$mode.yaml" --cache-dir "$WORK/lcache-$mode-$i" \
      --cache-size 4GiB
    line=$(wait_for_line "$WORK/lw-$mode-$i.log" '^listening: ' 60 "$BG_PID")
    line=${line#listening: }
    members+="    - ${line#* id=}@${line%% *}"$'\n'
    line=$(wait_for_line "$WORK/lw-$mode-$i.log" '^s3: endpoint=' 60 "$BG_PID")
    [[ $i == 0 ]] && LISTEN_S3=${line#s3: endpoint=http://}
  done
  { cat "$WORK/lw-$mode.yaml"; printf 'cluster:\n  workers:\n%s' "$members"; } >"$WORK/lc-$mode.yaml"
}
for mode in proxy redirect; do
  log "worker S3 listeners, $mode mode"
  start_listen_cluster "$mode"
  SPEC[$mode]="http:http://$LISTEN_S3/data"
  run "$mode" warm 0 "$WORK/large.manifest" --workload whole --readers 4
  run "$mode" warm 0 "$WORK/small.manifest" --workload whole --readers 8
  for ((r = 1; r <= ROUNDS; r++)); do
    run "$mode" large "$r" "$WORK/large.manifest" --workload whole --readers 4
    run "$mode" small "$r" "$WORK/small.manifest" --workload whole --readers 8
  done
done

median() {  # median ROW CONTENDER COLUMN(3=mbps 4=ops)
  awk -F'\t' -v row="$1" -v c="$2" -v col="$3" '$1==row && $2==c {print $col}' "$RESULTS" | sort -g |
    awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
LN=$(median large nginx 3); LS=$(median large shoal_s3 3)
SN=$(median small nginx 4); SS=$(median small shoal_s3 4); SD=$(median small direct 4)
echo "| workload | nginx (sendfile) | Shoal S3 endpoint | endpoint / nginx | direct S3 (WAN) | endpoint / direct |"
echo "|---|---|---|---|---|---|"
echo "| warm 64 MiB objects, 4 readers, MB/s | $LN | $LS | $(ratio "$LS" "$LN") | | |"
echo "| warm 110-150 KiB objects, 8 readers, GET/s | $SN | $SS | $(ratio "$SS" "$SN") | $SD | $(ratio "$SS" "$SD") |"
echo
LP=$(median large proxy 3); LR=$(median large redirect 3); SP=$(median small proxy 4); SR=$(median small redirect 4)
echo "| GETs sent to worker 0 (it owns about half) | proxy mode | redirect mode (307 to the owner) | redirect / proxy |"
echo "|---|---|---|---|"
echo "| warm 64 MiB objects, 4 readers, MB/s | $LP | $LR | $(ratio "$LR" "$LP") |"
echo "| warm 110-150 KiB objects, 8 readers, GET/s | $SP | $SR | $(ratio "$SR" "$SP") |"
echo
echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); medians of $ROUNDS rounds; $LARGE_N x 64 MiB, $SMALL_N small objects; $(date -u '+%Y-%m-%d %H:%M UTC')"
exit 0
}
