#!/usr/bin/env bash
# bench/fuse_fio.sh MOUNT_DIR LOCAL_DIR FILE...: fio 256 KiB sequential and 4 KiB random reads at
# 1 and 16 jobs over the files FILE... (names relative to both directories) through a Shoal FUSE
# mount and on a local copy (the limit), and prints a markdown table with the ratios.
#
# Each job first drops the kernel's cached pages of its files (fio --invalidate=1), so the mount's
# figures are reads through the FUSE daemon, and the local ones reads from the local disk and its
# cache. Byte-for-byte checks of the same jobs (fio --verify) are in tests/fuse_test.cc.
#
# With FUSE_LOG set to the mount daemon's log, each row also counts the workers the daemon marked
# down during the job ("is down" lines): no worker is stopped here, so every one is a false failover
# (a live worker taken for a hung one under load; client/worker_caller.h says how that is told apart).
set -euo pipefail
MNT=$1 LOCAL=$2
shift 2
RUNTIME=${FIO_RUNTIME:-5}

files() {  # files DIR: fio's --filename list
  local dir=$1 out="" f
  for f in "${FILES[@]}"; do out+="${out:+:}$dir/$f"; done
  printf '%s' "$out"
}
FILES=("$@")

# run DIR RW BS JOBS: prints "MB/s IOPS" (or "failed").
run() {
  local dir=$1 rw=$2 bs=$3 jobs=$4
  fio --name=j --filename="$(files "$dir")" --readonly --rw="$rw" --bs="$bs" --numjobs="$jobs" --invalidate=1 \
    --runtime="$RUNTIME" --time_based --group_reporting --output-format=json 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["jobs"][0]["read"]; print("%.1f %.0f" % (r["bw_bytes"]/1e6, r["iops"]))' ||
    echo "failed"
}

down_lines() {
  if [[ -n ${FUSE_LOG:-} && -f $FUSE_LOG ]]; then grep -c 'is down' "$FUSE_LOG" || true; else echo 0; fi
}

echo "| fio job | through the mount MB/s (IOPS) | local copy MB/s (IOPS) | ratio | workers marked down during the mount's job (false failovers) |"
echo "|---|---|---|---|---|"
for job in "read 256k 1" "read 256k 16" "randread 4k 1" "randread 4k 16"; do
  read -r rw bs jobs <<<"$job"
  before=$(down_lines)
  m=$(run "$MNT" "$rw" "$bs" "$jobs")
  down=$(($(down_lines) - before))
  [[ -n ${FUSE_LOG:-} ]] || down="(no FUSE_LOG)"
  l=$(run "$LOCAL" "$rw" "$bs" "$jobs")
  if [[ $m == failed || $l == failed ]]; then
    echo "| $rw $bs x$jobs | $m | $l | | $down |"
  else
    read -r mb mi <<<"$m"
    read -r lb li <<<"$l"
    echo "| $rw $bs x$jobs | $mb ($mi) | $lb ($li) | $(awk -v a="$mb" -v b="$lb" 'BEGIN { if (b > 0) printf "%.2f", a / b }') | $down |"
  fi
done
