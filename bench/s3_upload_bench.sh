#!/usr/bin/env bash
# bench/s3_upload_bench.sh: uploads through Shoal's S3 endpoint (`shoal up
# --ufs DIR --s3 0`, 2 workers) against s3rver on the same machine, and a
# plain `cp` of the same 100 MiB into the under-store directory (issue 32
# item 6: target >= 2x s3rver, >= 0.5x cp). boto3 (bench/s3_upload_bench.py)
# runs the same rows against each; every object is read back and checked.
# The limit row: the same boto3 rows against bench/s3_sink.py, an endpoint
# that reads each body and keeps nothing, which is what the client itself
# costs on this machine (no endpoint can take the bytes faster); the hashing
# limit: the same sink computing the SHA-256 and MD5 that S3 semantics ask
# of every endpoint before it answers (bench/s3_sink.py --hash), still no disk.
#
#   bench/s3_upload_bench.sh [--rounds R]
#
# Prints a Markdown table: best of R rounds per row, MB/s and the ratios.
# Rounds alternate (s3rver, Shoal, s3rver, ...), so a swing of the machine's
# load falls on both sides instead of on whichever ran last.
{
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=3
while (($#)); do
  case $1 in
    --rounds) ROUNDS=$2; shift ;;
    *) echo "usage: bench/s3_upload_bench.sh [--rounds R]" >&2; exit 2 ;;
  esac
  shift
done
# shellcheck source=bench/standalone.sh
source "$ROOT/bench/standalone.sh" s3upload

start_s3rver "$WORK/s3rver" bench
mkdir -p "$WORK/ufs"
bg shoal "$BUILD_DIR/shoal" up --ufs "$WORK/ufs" --workers 2 --cache-dir "$WORK/cache" --cache-size 2GiB \
  --state-dir "$WORK/state" --s3 0
line=$(wait_for_line "$WORK/shoal.log" '^s3: endpoint=' 60 "$BG_PID")
read -r EP AK SK <<<"$(sed -E 's/^s3: endpoint=(\S+) access_key=(\S+) secret_key=(\S+).*/\1 \2 \3/' <<<"$line")"
log "shoal s3 $EP; s3rver 127.0.0.1:$S3_PORT; machine load $(cut -d' ' -f1-3 /proc/loadavg)"

bg sink /usr/bin/python3 "$ROOT/bench/s3_sink.py"
SINK_PORT=$(wait_for_line "$WORK/sink.log" '^sink: port=' 30 "$BG_PID" | sed 's/^sink: port=//')
bg hsink /usr/bin/python3 "$ROOT/bench/s3_sink.py" --hash
HSINK_PORT=$(wait_for_line "$WORK/hsink.log" '^sink: port=' 30 "$BG_PID" | sed 's/^sink: port=//')

py() {  # py LABEL ENDPOINT BUCKET AK SK [ARGS...]
  local label=$1 ep=$2 bucket=$3 ak=$4 sk=$5
  shift 5
  mkdir -p "$WORK/py-$label"
  AWS_ACCESS_KEY_ID=$ak AWS_SECRET_ACCESS_KEY=$sk AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null \
    AWS_EC2_METADATA_DISABLED=true /usr/bin/python3 "$ROOT/bench/s3_upload_bench.py" --endpoint "$ep" \
    --bucket "$bucket" --work "$WORK/py-$label" --rounds 1 "$@" | sed "s/^/$label /" >>"$RESULTS"
}
for ((r = 0; r < ROUNDS; r++)); do
  py s3rver "http://127.0.0.1:$S3_PORT" bench S3RVER S3RVER
  py shoal "$EP" data "$AK" "$SK"
  py sink "http://127.0.0.1:$SINK_PORT" sink SINK SINK --no-verify
  py hsink "http://127.0.0.1:$HSINK_PORT" sink SINK SINK --no-verify
done

# cp of the same 100 MiB into the under-store directory (page cache, no fsync; best of R).
src="$WORK/py-shoal/upload_100MiB.bin"
bestcp=""
for ((r = 0; r < ROUNDS; r++)); do
  t0=$(date +%s.%N)
  cp "$src" "$WORK/ufs/cp-$r.bin"
  t1=$(date +%s.%N)
  s=$(echo "$t1 - $t0" | bc -l)
  if [[ -z $bestcp ]] || (($(echo "$s < $bestcp" | bc -l))); then bestcp=$s; fi
done
printf 'cp upload_file_100MiB %.3f %.1f\n' "$bestcp" "$(echo "104.8576 / $bestcp" | bc -l)" >>"$RESULTS"

echo "| row | shoal MB/s | s3rver MB/s | shoal / s3rver | client limit (sink) MB/s | hashing limit (sink --hash) MB/s | shoal / hashing limit | 2x s3rver / hashing limit | cp into the directory MB/s | shoal / cp |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for row in put_object_40MiB upload_part_5x8MiB upload_file_100MiB; do
  # The best round of each (rounds are interleaved above).
  s=$(awk -v r=$row '$1=="shoal" && $2==r && $4>m {m=$4} END {print m}' "$RESULTS")
  v=$(awk -v r=$row '$1=="s3rver" && $2==r && $4>m {m=$4} END {print m}' "$RESULTS")
  k=$(awk -v r=$row '$1=="sink" && $2==r && $4>m {m=$4} END {print m}' "$RESULTS")
  h=$(awk -v r=$row '$1=="hsink" && $2==r && $4>m {m=$4} END {print m}' "$RESULTS")
  c=$(awk '$1=="cp" {print $4}' "$RESULTS")
  printf '| %s | %s | %s | %.2f | %s | %s | %.2f | %.2f | %s | %.2f |\n' "$row" "$s" "$v" "$(echo "$s / $v" | bc -l)" \
    "$k" "$h" "$(echo "$s / $h" | bc -l)" "$(echo "2 * $v / $h" | bc -l)" "$c" "$(echo "$s / $c" | bc -l)"
done
echo
echo "best of $ROUNDS rounds; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
exit 0
}
