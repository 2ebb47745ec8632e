# Sourced by the benchmark scripts that run on their own (epoch_bench.sh,
# load_bench.sh, s3_endpoint_bench.sh) once they have parsed their arguments,
# with ROOT set: builds what they run, makes $WORK (named after $1), sources
# services.sh with its cleanup on exit, and sets BUILD_DIR, BIN, LG, DATA and
# an empty RESULTS file.
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
BIN="$BUILD_DIR/bench"
ninja -C "$BUILD_DIR" -j2 loadgen wan_proxy shoal >/dev/null
WORK=$(mktemp -d "/tmp/shoal-$1.XXXXXX")
# shellcheck source=bench/services.sh
source "$ROOT/bench/services.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM
LG="$BIN/loadgen"
DATA="$WORK/data"
RESULTS="$WORK/results.tsv"
: >"$RESULTS"
