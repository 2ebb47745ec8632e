#!/usr/bin/env bash
# The checkpoint benchmark alone (bench/run runs it among everything else):
# s3rver behind the WAN emulator (20 ms, 25 MB/s per connection, 200 MB/s in
# all), then bench/checkpoint_bench over it. Prints its markdown tables.
#
#   bench/checkpoint_bench.sh [--quick] [--modes LIST]
#     --quick: 8 x 32 MiB, 100 small writes
#     --modes: some of direct,through,cache-through,write-back (default: all)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
BIN="$BUILD_DIR/bench"
QUICK=0
MODES=direct,through,cache-through,write-back
usage() {
  echo "usage: bench/checkpoint_bench.sh [--quick] [--modes LIST]   (--quick: 8 x 32 MiB, 100 small writes; default 8 x 256 MiB, 300;"
  echo "       --modes: some of direct,through,cache-through,write-back, comma-separated; default all)"
}
while (($#)); do
  case $1 in
    --quick) QUICK=1 ;;
    --modes)
      [[ $# -ge 2 ]] || { echo "bench/checkpoint_bench.sh: --modes needs a list" >&2; usage >&2; exit 2; }
      MODES=$2
      shift
      ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench/checkpoint_bench.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[[ -x $BIN/checkpoint_bench && -x $BIN/wan_proxy && -x $BUILD_DIR/shoal ]] ||
  { echo "bench/checkpoint_bench.sh: build first (ninja -C $BUILD_DIR shoal checkpoint_bench wan_proxy)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/shoal-ckpt-bench.XXXXXX)
# shellcheck source=bench/services.sh
source "$ROOT/bench/services.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM
BUCKET=ckpt
start_s3rver "$WORK/s3rver" "$BUCKET"
start_proxy PROXY "$S3_PORT"
log "s3rver 127.0.0.1:$S3_PORT behind wan_proxy 127.0.0.1:$PROXY_PORT"
"$BIN/checkpoint_bench" --shoal "$BUILD_DIR/shoal" --endpoint "http://127.0.0.1:$PROXY_PORT" --bucket "$BUCKET" \
  --files 8 --size "$((QUICK ? 32 : 256))MiB" --small "$((QUICK ? 100 : 300))" --modes "$MODES"
