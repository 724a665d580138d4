#!/usr/bin/env bash
# lockstep as a user gets it: `cmake --install` of this build into a temporary prefix, then, out of the tree and
# against that prefix only, a find_package(lockstep 0.1) project (tests/install/project) built and run, examples/
# configured standalone, the installed CLI and man page, and pkg-config's flags linking the same program again.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR CXX_COMPILER C_COMPILER
set -euo pipefail
build=$1 source=$2 cxx=$3 cc=$4

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
step() { echo "== $*"; }
fail() { echo "install_test: $*" >&2; exit 1; }
# quiet LOG COMMAND...: runs COMMAND with its output in $tmp/LOG, shown only when it fails.
quiet() {
  local log=$tmp/$1
  shift
  "$@" >"$log" 2>&1 || { cat "$log"; fail "failed: $*"; }
}

step "cmake --install $build --prefix $prefix"
quiet install.log cmake --install "$build" --prefix "$prefix"
for f in bin/lockstep include/lockstep/lockstep.h include/lockstep/core/version.h; do
  [ -e "$prefix/$f" ] || fail "$prefix/$f was not installed"
done
config=$(find "$prefix" -name lockstepConfig.cmake)
pc=$(find "$prefix" -name lockstep.pc)
[[ -n $config && -n $pc ]] || fail "lockstepConfig.cmake or lockstep.pc was not installed"
[ -n "$(find "$prefix" -path '*/man1/lockstep.1*')" ] || fail "the man page was not installed"
# Nothing installed may point back into the build or source tree.
if grep -rlI -e "$build" -e "$source" "$prefix" --include='*.cmake' --include='*.pc' --include='*.h'; then
  fail "the files above name the build or source tree"
fi

step "the installed CLI"
output=$("$prefix/bin/lockstep" --version)
echo "$output"
version=$(head -1 <<<"$output")  # then the CPU it runs on
[[ $version == "lockstep "[0-9]*.[0-9]*.[0-9]* ]] || fail "lockstep --version printed '$version'"
[[ $(sed -n 2p <<<"$output") == "cpu: "* ]] || fail "lockstep --version printed no cpu line: '$output'"
if command -v man >/dev/null; then  # man-db is not in every minimal image
  MANPATH=$prefix/share/man man -w lockstep | grep -q "^$prefix/" || fail "man -w lockstep misses the installed page"
fi

# The project sees the prefix and the system only: no lockstep build tree, no package registry.
configure() {
  quiet "$(basename "$2").log" cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
}
step "find_package(lockstep 0.1): build and run tests/install/project"
configure "$source/tests/install/project" "$tmp/project"
quiet project-build.log cmake --build "$tmp/project"
OMP_NUM_THREADS=1 "$tmp/project/install_smoke" | tee "$tmp/smoke.out"
number=${version#lockstep }
grep -qx "lockstep $number (headers $number, $number)" "$tmp/smoke.out" ||
  fail "install_smoke's version is not the CLI's $number"

step "find_package(lockstep 1.0) is refused (0.x versions are compatible within a minor version)"
mkdir -p "$tmp/too-new"
cat >"$tmp/too-new/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(too_new LANGUAGES CXX)
find_package(lockstep 1.0 QUIET)
if(lockstep_FOUND)
  message(FATAL_ERROR "lockstep ${lockstep_VERSION} accepted for 1.0")
endif()
CMAKE
configure "$tmp/too-new" "$tmp/too-new/build"

step "examples/ configured standalone against the prefix"
configure "$source/examples" "$tmp/examples"

step "pkg-config: flags from the prefix, and they link the same program"
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
cflags=$(pkg-config --cflags lockstep) libs=$(pkg-config --libs lockstep)
echo "cflags: $cflags"
echo "libs: ${libs:0:300} ..."
[[ $cflags == *"-I$prefix/include"* ]] || fail "pkg-config --cflags lockstep does not name $prefix/include"
[[ $libs == *"-L$(dirname "$(dirname "$pc")")"* ]] || fail "pkg-config --libs lockstep misses the prefix's libdir"
object=$(find "$tmp/project" -name 'main.cc.o')
[ -n "$object" ] || fail "no object file of the project"
# pkg-config quotes its output for a shell (LOCKSTEP_VERSION is a string): eval it, as make's shell does.
echo '#include <lockstep/lockstep.h>
static_assert(sizeof(LOCKSTEP_VERSION) > 1 && LOCKSTEP_VERSION_MAJOR >= 0);' >"$tmp/pc.cc"
eval "\"\$cxx\" $cflags -fsyntax-only \"\$tmp/pc.cc\"" || fail "compiling with pkg-config --cflags lockstep failed"
eval "\"\$cxx\" -o \"\$tmp/smoke-pc\" \"\$object\" $libs" || fail "linking with pkg-config --libs lockstep failed"
OMP_NUM_THREADS=1 "$tmp/smoke-pc" >/dev/null || fail "the program linked with pkg-config's flags failed"
step "ok"
