#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# The installed package, as a C user sees it: `cmake --install BUILD --prefix P` into a temporary
# prefix, then README's C example ("The C API in a few lines", extracted from README.md) is built
# against P only, four ways -- `pkg-config --cflags --libs rlx` (shared), the same against the
# static librlx.a with `pkg-config --static`, and a tiny CMake project with
# find_package(rlx CONFIG REQUIRED) linking rlx::rlx and rlx::rlx_static -- and each program's
# output must be the graph's canonical text. Also: the versioned shared library
# (librlx.so -> librlx.so.MAJOR -> librlx.so.MAJOR.MINOR.PATCH, soname librlx.so.MAJOR, version
# from CMakeLists.txt), the .def tables next to the headers and every public header compiling
# on its own with nothing but -IP/include, the whole of librlx.a linking with the dependencies
# rlx.pc and rlx::rlx_static name (--whole-archive), and the installed `rlx` tool.
# usage: test_install.sh PATH/TO/rlx SOURCE_DIR   (the build tree is the folder of rlx)
set -u
RLX=${1:?usage: test_install.sh RLX SOURCE_DIR}
SRC=${2:?usage: test_install.sh RLX SOURCE_DIR}
BUILD="$(cd "$(dirname "$RLX")" && pwd)"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
source "$SRC/tests/cli/lib.sh"
finish() {
  echo "install: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}
for tool in cmake pkg-config cc readelf; do
  command -v "$tool" >/dev/null 2>&1 || bad "$tool not found (scripts/setup.sh installs it)"
done
[ "$failed" -eq 0 ] || finish

cache() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt"; }
CC=$(cache CMAKE_C_COMPILER)
[ -n "$CC" ] || CC=cc
# A sanitizer build installs instrumented libraries: their users must link the runtimes too.
SAN=()
[ "$(cache RLX_SANITIZE)" = ON ] && SAN=(-fsanitize=address,undefined)
VERSION=$(sed -n 's/^project(rlx VERSION \([0-9.]*\) .*/\1/p' "$SRC/CMakeLists.txt")
MAJOR=${VERSION%%.*}
[ -n "$VERSION" ] && ok || bad "no project(rlx VERSION x.y.z ...) line in CMakeLists.txt"

# ---- install ----
P="$TMP/prefix"
if cmake --install "$BUILD" --prefix "$P" >"$TMP/install.log" 2>&1; then ok; else
  bad "cmake --install $BUILD --prefix P failed (build the rlx, rlx_shared and rlx_static targets first)"
  tail -n 5 "$TMP/install.log" | sed 's/^/  /' >&2
  finish
fi
LIB="$P/lib"
[ -d "$LIB" ] || LIB=$(dirname "$(find "$P" -name 'librlx.so' | head -n 1)")
for f in "$P/bin/rlx" "$LIB/librlx.a" "$LIB/librlx.so.$VERSION" "$LIB/pkgconfig/rlx.pc" \
         "$LIB/cmake/rlx/rlxConfig.cmake" "$LIB/cmake/rlx/rlxConfigVersion.cmake" "$LIB/cmake/rlx/rlxTargets.cmake" \
         "$P/include/rlx/rlx.h" "$P/include/rlx/ops.def" "$P/include/rlx/enums.def" "$P/include/rlx/version.h"; do
  [ -f "$f" ] && ok || bad "not installed: ${f#"$P"/}"
done
[ "$(readlink "$LIB/librlx.so")" = "librlx.so.$MAJOR" ] && ok || bad "librlx.so -> $(readlink "$LIB/librlx.so"), expected librlx.so.$MAJOR"
[ "$(readlink "$LIB/librlx.so.$MAJOR")" = "librlx.so.$VERSION" ] && ok ||
  bad "librlx.so.$MAJOR -> $(readlink "$LIB/librlx.so.$MAJOR"), expected librlx.so.$VERSION"
readelf -d "$LIB/librlx.so.$VERSION" >"$TMP/dyn" 2>&1
has "$TMP/dyn" "Library soname: [librlx.so.$MAJOR]" "soname"
expect 0 "installed rlx --version" -- "$P/bin/rlx" --version
has "$TMP/out" "rlx $VERSION" "rlx --version prints the version of CMakeLists.txt"
grep -q "#define RLX_VERSION_STRING \"$VERSION\"" "$P/include/rlx/version.h" && ok || bad "version.h does not hold $VERSION"

# ---- every public header on its own, with only the installed include folder ----
for h in "$P"/include/rlx/*.h; do
  b=$(basename "$h")
  printf '#include "rlx/%s"\n#include "rlx/%s"\nint rlx_header_test_%s;\n' "$b" "$b" "${b%.h}" >"$TMP/h.c"
  if "$CC" -std=c17 -Wall -Wextra -Werror -pedantic -fsyntax-only -I"$P/include" "$TMP/h.c" 2>"$TMP/h.err"; then ok; else
    bad "rlx/$b does not compile on its own with -I<prefix>/include"
    head -n 5 "$TMP/h.err" | sed 's/^/  /' >&2
  fi
done

# ---- README's example ----
awk '/^## The C API/ { f = 1 } f && /^```c/ { g = 1; next } g && /^```/ { exit } g' "$SRC/README.md" >"$TMP/tiny.c"
grep -q 'rlx_graph_create' "$TMP/tiny.c" && ok || { bad "no C example under '## The C API' in README.md"; finish; }
# The canonical text of x[2,3] f32 @ w[3,4] f32 (docs/ir-format.md).
cat >"$TMP/want.txt" <<'EOF'
graph @tiny {
  %0 = Input {name = "x"} : [2, 3] f32
  %1 = Input {name = "w"} : [3, 4] f32
  %2 = MatMul(%0, %1) : [2, 4] f32
  return %2
}
EOF
run_tiny() { # run_tiny WHAT BINARY
  if "$2" >"$TMP/got.txt" 2>"$TMP/got.err" && cmp -s "$TMP/got.txt" "$TMP/want.txt"; then ok; else
    bad "$1: the program's output differs from the expected graph text"
    diff "$TMP/want.txt" "$TMP/got.txt" | head -n 10 | sed 's/^/  /' >&2
    head -n 5 "$TMP/got.err" | sed 's/^/  stderr: /' >&2
  fi
}
linked_to() { # linked_to WHAT BINARY yes|no: whether it needs librlx.so.MAJOR at run time
  local n
  n=$(readelf -d "$2" 2>/dev/null | grep -c "Shared library: \[librlx.so.$MAJOR\]")
  if { [ "$3" = yes ] && [ "$n" -eq 1 ]; } || { [ "$3" = no ] && [ "$n" -eq 0 ]; }; then ok; else
    bad "$1: NEEDED librlx.so.$MAJOR count is $n (expected $3)"
  fi
}

export PKG_CONFIG_PATH="$LIB/pkgconfig"
# shellcheck disable=SC2046
if pkg-config --exists rlx && [ "$(pkg-config --modversion rlx)" = "$VERSION" ]; then ok; else
  bad "pkg-config does not find rlx $VERSION in $PKG_CONFIG_PATH"
fi
read -r -a PC_CFLAGS <<<"$(pkg-config --cflags rlx)"
read -r -a PC_LIBS <<<"$(pkg-config --libs rlx)"
if "$CC" -std=c17 -Wall -Wextra -Werror "${SAN[@]}" "$TMP/tiny.c" "${PC_CFLAGS[@]}" "${PC_LIBS[@]}" \
     -Wl,-rpath,"$LIB" -o "$TMP/tiny_pc" 2>"$TMP/cc.err"; then
  ok; run_tiny "pkg-config (shared)" "$TMP/tiny_pc"; linked_to "pkg-config (shared)" "$TMP/tiny_pc" yes
else
  bad "cc tiny.c \$(pkg-config --cflags --libs rlx) failed"; head -n 10 "$TMP/cc.err" | sed 's/^/  /' >&2
fi
# static: the same flags with --static, librlx.a named instead of -lrlx
read -r -a PC_SLIBS <<<"$(pkg-config --static --libs rlx)"
SLIBS=()
for a in "${PC_SLIBS[@]}"; do if [ "$a" = -lrlx ]; then SLIBS+=("$LIB/librlx.a"); else SLIBS+=("$a"); fi; done
if "$CC" -std=c17 -Wall -Wextra -Werror "${SAN[@]}" "$TMP/tiny.c" "${PC_CFLAGS[@]}" "${SLIBS[@]}" \
     -o "$TMP/tiny_pc_static" 2>"$TMP/cc.err"; then
  ok; run_tiny "pkg-config --static" "$TMP/tiny_pc_static"; linked_to "pkg-config --static" "$TMP/tiny_pc_static" no
else
  bad "cc tiny.c with \$(pkg-config --static --libs rlx) and librlx.a failed"; head -n 10 "$TMP/cc.err" | sed 's/^/  /' >&2
fi
# every object of librlx.a, not only what tiny.c pulls in, links with what pkg-config --static names
printf 'int main(void) { return 0; }\n' >"$TMP/empty.c"
WA=()
for a in "${PC_SLIBS[@]}"; do
  if [ "$a" = -lrlx ]; then WA+=(-Wl,--whole-archive "$LIB/librlx.a" -Wl,--no-whole-archive); else WA+=("$a"); fi
done
if "$CC" "${SAN[@]}" "$TMP/empty.c" "${WA[@]}" -o "$TMP/whole" 2>"$TMP/cc.err"; then ok; else
  bad "the whole of librlx.a does not link with \$(pkg-config --static --libs rlx): a dependency is missing from rlx.pc"
  grep -o "undefined reference to \`[^']*'" "$TMP/cc.err" | sort -u | head -n 5 | sed 's/^/  /' >&2
fi
unset PKG_CONFIG_PATH

# ---- find_package(rlx CONFIG) ----
mkdir -p "$TMP/proj"
cp "$TMP/tiny.c" "$TMP/proj/tiny.c"
cat >"$TMP/proj/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.20)
project(tiny LANGUAGES C)
find_package(rlx $VERSION CONFIG REQUIRED)
add_executable(tiny tiny.c)
target_link_libraries(tiny rlx::rlx)
add_executable(tiny_static tiny.c)
target_link_libraries(tiny_static rlx::rlx_static)
# all of librlx.a: rlx::rlx_static must bring every library its objects need
add_executable(whole empty.c)
target_link_libraries(whole "\$<LINK_LIBRARY:WHOLE_ARCHIVE,rlx::rlx_static>")
EOF
cp "$TMP/empty.c" "$TMP/proj/empty.c"
if cmake -S "$TMP/proj" -B "$TMP/proj/build" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$CC" \
     -DCMAKE_C_FLAGS="${SAN[*]}" -DCMAKE_EXE_LINKER_FLAGS="${SAN[*]}" >"$TMP/proj.log" 2>&1 &&
   cmake --build "$TMP/proj/build" >>"$TMP/proj.log" 2>&1; then
  ok
  run_tiny "find_package rlx::rlx" "$TMP/proj/build/tiny"; linked_to "rlx::rlx" "$TMP/proj/build/tiny" yes
  run_tiny "find_package rlx::rlx_static" "$TMP/proj/build/tiny_static"
  linked_to "rlx::rlx_static" "$TMP/proj/build/tiny_static" no
else
  bad "the CMake project with find_package(rlx CONFIG REQUIRED) did not build"
  tail -n 15 "$TMP/proj.log" | sed 's/^/  /' >&2
fi
# a version the package does not offer is refused
sed -i "s/find_package(rlx $VERSION/find_package(rlx $((MAJOR + 1)).0/" "$TMP/proj/CMakeLists.txt"
expect 1 "find_package of a newer major version fails" -- cmake -S "$TMP/proj" -B "$TMP/proj/build2" -DCMAKE_PREFIX_PATH="$P"
finish
