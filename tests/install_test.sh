#!/usr/bin/env bash
# The install test (CTest: install_test): installs BUILD_DIR into a temp prefix,
# then builds tests/install_consumer/main.cc against that prefix both ways a user
# would -- find_package(Shoal) and pkg-config -- and runs each program.
#   tests/install_test.sh BUILD_DIR [CXX [CXXFLAGS]]   (CXXFLAGS: a sanitizer build's -fsanitize=...)
set -euo pipefail
build=$(cd "$1" && pwd)
cxx=${2:-g++}
cxxflags=${3:-}
src=$(cd "$(dirname "$0")" && pwd)/install_consumer
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shoal-install-test-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

# Runs a command with its output kept aside, shown only if it fails.
quiet() {
  "$@" >"$tmp/log" 2>&1 || { cat "$tmp/log"; echo "install_test: failed: $*" >&2; exit 1; }
}

quiet cmake --install "$build" --prefix "$prefix"
for f in include/shoal/client.h include/shoal/status.h include/shoal/log.h include/shoal/version.h bin/shoal; do
  [ -f "$prefix/$f" ] || { echo "install_test: $f was not installed" >&2; exit 1; }
done
quiet "$prefix/bin/shoal" --help

# Each installed header compiles on its own (it includes what it uses), and
# none includes a header that is not installed.
echo "headers:"
for h in "$prefix"/include/shoal/*.h; do
  echo "  $(basename "$h")"
  echo "#include <shoal/$(basename "$h")>" >"$tmp/header.cc"
  quiet "$cxx" $cxxflags -std=c++23 -fsyntax-only -I "$prefix/include" "$tmp/header.cc"
done

# The binary and the headers name one version.
version=$(sed -n 's/^#define SHOAL_VERSION "\(.*\)"$/\1/p' "$prefix/include/shoal/version.h")
[ -n "$version" ] || { echo "install_test: no SHOAL_VERSION in shoal/version.h" >&2; exit 1; }
"$prefix/bin/shoal" --version | grep -q "^shoal $version (commit " ||
  { echo "install_test: shoal --version does not say $version: $("$prefix/bin/shoal" --version)" >&2; exit 1; }
pc=$(find "$prefix" -name shoal.pc)
[ -n "$pc" ] || { echo "install_test: shoal.pc was not installed" >&2; exit 1; }

echo "find_package(Shoal):"
quiet cmake -S "$src" -B "$tmp/cmake" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$cxxflags" \
  -DCMAKE_PREFIX_PATH="$prefix"
quiet ninja -C "$tmp/cmake"
"$tmp/cmake/install_consumer"

echo "pkg-config:"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs shoal)
echo "  $cxx $cxxflags main.cc $flags"
quiet "$cxx" $cxxflags -o "$tmp/pkg_config_consumer" "$src/main.cc" $flags
"$tmp/pkg_config_consumer"
