#!/usr/bin/env bash
# bench/fuse_posix_ls.sh [--files N] [--rounds R] [--no-wan]: what the mount option posix_attributes costs a
# listing through the FUSE mount (issue 32 item 10). An S3 listing carries no user metadata, so a
# mount that keeps modes, owners and times there stats each listed file (a HEAD per file the
# workers have not seen yet); without the option the listing alone answers `ls -l`.
#
# N small objects (default 1000) in one directory of s3rver behind the WAN emulator (20 ms each
# way, as the other benches; --no-wan: s3rver itself, the store's own cost per request); `shoal
# up` (1 worker, ttl=1h) with and without posix_attributes on the same
# bucket; per round and cluster, `ls -l` of the directory on a fresh FUSE mount (the kernel caches
# nothing), first with the workers' metadata dropped (`shoal refresh`: every stat asks the store)
# and then again on another fresh mount (the workers' stats cached). Medians of R rounds.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FILES=1000
ROUNDS=3
WAN=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --files) FILES=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --no-wan) WAN=0 ;;
    *) echo "usage: bench/fuse_posix_ls.sh [--files N] [--rounds R] [--no-wan]" >&2; exit 2 ;;
  esac
  shift
done
# shellcheck source=bench/standalone.sh
source "$ROOT/bench/standalone.sh" fuse-posix-ls
SHOAL=$BUILD_DIR/shoal

start_s3rver "$WORK/s3" lsb
if ((WAN)); then
  start_proxy PROXY "$S3_PORT"  # the WAN: 20 ms, 25 MB/s/conn, 200 MB/s total
  STORE="s3rver behind the WAN emulator (20 ms)"
else
  PROXY_PORT=$S3_PORT  # start_shoal's endpoint: s3rver itself
  STORE="s3rver on loopback (no WAN emulator)"
fi
log "uploading $FILES objects"
mkdir -p "$DATA/dir"
/usr/bin/python3 - "$DATA/dir" "$FILES" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(root, "f%06d" % i), "wb") as f:
        f.write(b"x" * (100 + i % 900))
PY
upload "$DATA" dir "$S3_PORT" lsb 16

SHOAL_CACHE_SIZE=1GiB
SHOAL_NAME=plain start_shoal s3://lsb/ 1 "$WORK/cache-plain"
PLAIN_CONFIG=$SHOAL_CONFIG
PLAIN_PID=$SHOAL_PID
SHOAL_PID=""
SHOAL_NAME=posix start_shoal s3://lsb/ 1 "$WORK/cache-posix" -o posix_attributes=true
POSIX_CONFIG=$SHOAL_CONFIG

# ls_on_fresh_mount CONFIG: seconds of `ls -l` of the directory on a new mount; checks the count.
n=0
ls_on_fresh_mount() {
  local config=$1 mnt="$WORK/mnt-$((n += 1))"
  mkdir -p "$mnt"
  "$SHOAL" fuse "$mnt" --config "$config" >/dev/null
  echo "$mnt" >>"$MOUNTS_FILE"
  local start end lines
  start=$(date +%s.%N)
  lines=$(ls -l "$mnt/data/dir" | grep -c '^-')
  end=$(date +%s.%N)
  "$SHOAL" fuse --unmount "$mnt" >/dev/null
  [[ $lines == "$FILES" ]] || { log "ls -l listed $lines files, not $FILES"; exit 1; }
  echo "$end - $start" | bc
}

declare -A T
for r in $(seq 1 "$ROUNDS"); do
  for c in plain posix; do
    config=$PLAIN_CONFIG
    [[ $c == posix ]] && config=$POSIX_CONFIG
    "$SHOAL" refresh -r --config "$config" /data/dir >/dev/null
    T[$c-cold]+="$(ls_on_fresh_mount "$config") "
    T[$c-warm]+="$(ls_on_fresh_mount "$config") "
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
echo "| \`ls -l\` of $FILES files in one directory, fresh FUSE mount | without posix_attributes (s) | with (s) | with / without |"
echo "|---|---|---|---|"
for k in cold warm; do
  a=$(echo "${T[plain-$k]}" | median)
  b=$(echo "${T[posix-$k]}" | median)
  what="workers' metadata dropped"
  [[ $k == warm ]] && what="workers' stats cached"
  echo "| $what | $a | $b | $(echo "scale=2; $b / $a" | bc) |"
done
echo
echo "$STORE, 1 worker, ttl=1h; medians of $ROUNDS rounds; $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')"
stop_pid "$PLAIN_PID"
