#!/usr/bin/env bash
# bench/tls_bench.sh: what TLS costs a warm read (issue 27), side by side in one run.
#
#   bench/tls_bench.sh [--rounds R] [--large-n N] [--small-n N] [--first N]
#
# Two 2-worker `shoal up` clusters on the same directory, one plain and one with
# --tls (its local CA), read by loadgen's Shoal reader over TCP (short circuit
# off: readers on other hosts), every byte checked: warm 64 MiB files (4
# readers) and warm ~128 KiB files (8 readers; connections reused). The anchor
# is nginx serving the same files over http and over https (TLS 1.3, the same
# kind of EC certificate, `ssl_conf_command Options KTLS` asked for). A new
# client's first read: `shoal cat` of a warm 4 KiB file, N runs each (process
# start included, the same in both), median wall time. kTLS needs the kernel's
# `tls` module: the table says whether this kernel has it.
{
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=3
LARGE_N=4
SMALL_N=1500
FIRST_N=30
while (($#)); do
  case $1 in
    --rounds) ROUNDS=$2; shift ;;
    --large-n) LARGE_N=$2; shift ;;
    --small-n) SMALL_N=$2; shift ;;
    --first) FIRST_N=$2; shift ;;
    *) echo "usage: bench/tls_bench.sh [--rounds R] [--large-n N] [--small-n N] [--first N]" >&2; exit 2 ;;
  esac
  shift
done
# shellcheck source=bench/standalone.sh
source "$ROOT/bench/standalone.sh" tlsbench

"$LG" gen --root "$DATA" --prefix large --count "$LARGE_N" --min-size 64MiB --max-size 64MiB --seed 41 \
  --manifest "$WORK/large.manifest" >&2
"$LG" gen --root "$DATA" --prefix small --count "$SMALL_N" --min-size 110KiB --max-size 150KiB --seed 42 \
  --manifest "$WORK/small.manifest" >&2
head -c 4096 /dev/urandom >"$DATA/first.bin"

# The clusters; each client config with the short circuit off.
start_cluster() {  # start_cluster NAME [--tls]; sets CONFIG_<NAME>
  local name=$1 line
  shift
  bg "up-$name" "$BUILD_DIR/shoal" up --ufs "$DATA" --workers 2 --cache-dir "$WORK/cache-$name" --cache-size 4GiB \
    --state-dir "$WORK/state-$name" --consistency immutable "$@"
  line=$(wait_for_line "$WORK/up-$name.log" '^ready: config=' 60 "$BG_PID")
  /usr/bin/python3 - "${line#ready: config=}" "$WORK/client-$name.yaml" <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
c.setdefault("client", {})["short_circuit"] = False
yaml.safe_dump(c, open(sys.argv[2], "w"))
PY
  printf -v "CONFIG_$name" '%s' "$WORK/client-$name.yaml"
}
start_cluster plain
start_cluster tls --tls
CA="$WORK/state-tls/tls/ca.pem"

# nginx over http and https with the cluster's certificate (same CA, same key type).
start_nginx "$DATA"
start_nginx "$DATA" "$WORK/state-tls/tls/worker.pem" "$WORK/state-tls/tls/worker.key"
KTLS="no: this kernel has no tls module (/sys/module/tls), so nginx and Shoal encrypt in user space"
[[ -d /sys/module/tls ]] && KTLS="yes (/sys/module/tls)"
log "nginx http 127.0.0.1:$NGINX_PORT, https 127.0.0.1:$NGINX_TLS_PORT; kTLS: $KTLS"

declare -A SPEC=([shoal_plain]="shoal:$CONFIG_plain:/data" [shoal_tls]="shoal:$CONFIG_tls:/data"
  [nginx_http]="http:http://127.0.0.1:$NGINX_PORT" [nginx_https]="http:https://127.0.0.1:$NGINX_TLS_PORT")
RESULTS="$WORK/results.tsv"
: >"$RESULTS"
run() {  # run CONTENDER ROW ROUND MANIFEST [flags]
  local c=$1 row=$2 round=$3 manifest=$4
  shift 4
  LOADGEN_CA_FILE="$CA" "$LG" run --manifest "$manifest" --reader "${SPEC[$c]}" --label "$c" --seed "$round" \
    --timeout 900 "$@" >"$WORK/lg.out" 2>"$WORK/lg.err" ||
    { log "$c $row round $round failed: $(head -3 "$WORK/lg.err")"; return 1; }
  awk -v row="$row" -v c="$c" '/^result / { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
    printf "%s\t%s\t%s\t%s\n", row, c, f["mbps"], f["ops_per_s"] }' "$WORK/lg.out" >>"$RESULTS"
}
log "warming both clusters"
for c in shoal_plain shoal_tls; do
  run "$c" warm 0 "$WORK/large.manifest" --workload whole --readers 4
  run "$c" warm 0 "$WORK/small.manifest" --workload whole --readers 8
done
for ((r = 1; r <= ROUNDS; r++)); do
  log "round $r/$ROUNDS"
  for c in shoal_plain shoal_tls nginx_http nginx_https; do
    run "$c" large "$r" "$WORK/large.manifest" --workload whole --readers 4
    run "$c" small "$r" "$WORK/small.manifest" --workload whole --readers 8
  done
done

# A new client's first read, plain and TLS alternated.
for name in plain tls; do "$BUILD_DIR/shoal" cat --config "$WORK/client-$name.yaml" /data/first.bin >/dev/null; done
for ((i = 0; i < FIRST_N; i++)); do
  for name in plain tls; do
    s=$(date +%s%N)
    "$BUILD_DIR/shoal" cat --config "$WORK/client-$name.yaml" /data/first.bin >/dev/null
    echo "first	$name	$(( ($(date +%s%N) - s) / 1000 ))" >>"$WORK/first.tsv"
  done
done

median() {  # median ROW CONTENDER COLUMN(3=mbps 4=ops) [FILE]
  awk -F'\t' -v row="$1" -v c="$2" -v col="$3" '$1==row && $2==c {print $col}' "${4:-$RESULTS}" | sort -g |
    awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
LP=$(median large shoal_plain 3); LT=$(median large shoal_tls 3); LN=$(median large nginx_http 3)
LS=$(median large nginx_https 3)
SP=$(median small shoal_plain 4); ST=$(median small shoal_tls 4); SN=$(median small nginx_http 4)
SS=$(median small nginx_https 4)
FP=$(median first plain 3 "$WORK/first.tsv"); FT=$(median first tls 3 "$WORK/first.tsv")
echo "| workload | Shoal plain | Shoal TLS | TLS / plain (target) | nginx http | nginx https | nginx https / http |"
echo "|---|---|---|---|---|---|---|"
echo "| warm 64 MiB files, 4 readers, MB/s | $LP | $LT | $(ratio "$LT" "$LP") (>= 0.9) | $LN | $LS | $(ratio "$LS" "$LN") |"
echo "| warm 110-150 KiB files, 8 readers, reads/s | $SP | $ST | $(ratio "$ST" "$SP") (>= 0.8) | $SN | $SS | $(ratio "$SS" "$SN") |"
echo "| a new client's first read (shoal cat, 4 KiB warm), median ms | $(awk -v v="$FP" 'BEGIN{printf "%.1f", v/1000}') | $(awk -v v="$FT" 'BEGIN{printf "%.1f", v/1000}') | +$(awk -v a="$FT" -v b="$FP" 'BEGIN{printf "%.1f", (a-b)/1000}') ms (<= +5 ms) | | | |"
echo
echo "kTLS: $KTLS. $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); medians of $ROUNDS rounds (first read: $FIRST_N runs each); TCP only (short circuit off); $LARGE_N x 64 MiB, $SMALL_N small files; $(date -u '+%Y-%m-%d %H:%M UTC')"
exit 0
}
