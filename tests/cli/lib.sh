# SPDX-License-Identifier: MIT OR Apache-2.0
# Helpers shared by the CLI tests (sourced after TMP is set; the scripts print "N passed, N failed"):
#   ok / bad MESSAGE          count a passed / failed check
#   expect CODE WHAT -- CMD   run CMD (stdout > $TMP/out, stderr > $TMP/err) and check its exit code
#   has FILE TEXT WHAT        FILE contains TEXT
passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }
expect() {
  local want=$1 what=$2
  shift 3
  "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  if [ "$got" -eq "$want" ]; then ok; else
    bad "$what: exit $got, expected $want"
    sed 's/^/  stderr: /' "$TMP/err" | head -n 5 >&2
  fi
}
has() { if grep -qF -- "$2" "$1"; then ok; else bad "$3: '$2' not in $(basename "$1")"; sed 's/^/  /' "$1" | head -n 5 >&2; fi; }
