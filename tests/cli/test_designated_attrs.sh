#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
# Attribute structs are filled by field name: no positional initializer of an rlx_attrs_<Op> (or
# of a list / optional / bytes field inside one) anywhere in the C sources, so reordering a field
# in ops.def can never silently rebind a value. The checker must also catch a planted one.
# usage: test_designated_attrs.sh RLX SOURCE_DIR
set -u
SRC=${2:?usage: test_designated_attrs.sh RLX SOURCE_DIR}
cd "$SRC" || exit 1
mapfile -t files < <(git ls-files 'src/*.c' 'src/*.h' 'tools/*.c' 'tests/*.c' 'tests/*.h' 'bench/*.c' 2>/dev/null ||
                     find src tools tests bench -name '*.[ch]')
if ! python3 scripts/designate_attrs.py --check "${files[@]}"; then
  echo "FAIL: positional attribute initializers (fix: python3 scripts/designate_attrs.py --fix FILES)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'void f(void) { rlx_attrs_Narrow a = {0, 1, 2}; (void)a; }\n' >"$tmp/planted.c"
if python3 scripts/designate_attrs.py --check "$tmp/planted.c" >/dev/null; then
  echo "FAIL: the checker missed a planted positional initializer" >&2
  exit 1
fi
echo "designated attribute initializers: ok"
