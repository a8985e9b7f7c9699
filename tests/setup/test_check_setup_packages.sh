#!/usr/bin/env bash
# Tests of scripts/check_setup_packages.sh: its two comparison steps on fake package lists, and the whole check
# on BUILD_DIR with a scratch setup.sh that lacks a package the build uses.
# Usage: test_check_setup_packages.sh BUILD_DIR
set -uo pipefail
scripts=$(cd "$(dirname "$0")/../../scripts" && pwd)
build=${1:?usage: test_check_setup_packages.sh BUILD_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
expect() {  # expect NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then echo "ok   $1"; else printf 'FAIL %s\n  expected: %s\n  actual:   %s\n' "$1" "$2" "$3"; failures=$((failures + 1)); fi
}

# package_closure.awk: the first installed alternative counts, virtual names resolve through Provides, version
# and architecture qualifiers are ignored, base packages are always in, removed packages ("rc") are not.
t=$'\t'
cat > "$tmp/dpkg" <<DB
ii ${t}app${t}no${t}optional${t}${t}, libsecond:any (>= 2) | libthird, virt (>= 1), libfirst | libalso
ii ${t}libfirst${t}no${t}optional${t}${t}, libc6
ii ${t}libalso${t}no${t}optional${t}${t}, 
ii ${t}libsecond${t}no${t}optional${t}${t}, 
ii ${t}libthird${t}no${t}optional${t}${t}, 
ii ${t}impl${t}no${t}optional${t}virt (= 1.0), other${t}, 
ii ${t}libc6${t}no${t}optional${t}${t}, 
ii ${t}bash${t}yes${t}required${t}${t}, 
rc ${t}removed${t}no${t}optional${t}${t}, 
ii ${t}unrelated${t}no${t}optional${t}${t}, 
DB
closure=$(awk -v seeds="app removed" -f "$scripts/lib/package_closure.awk" "$tmp/dpkg" | sort | tr '\n' ' ')
expect "closure follows first installed alternatives and Provides" \
  "app bash impl libc6 libfirst libsecond missing removed " "$closure"

# unlisted_files.awk: a file passes when any of its owners (architecture suffix ignored) is in the closure.
printf '%s\n' app libfirst impl > "$tmp/closure"
printf '%s\t%s\n' /usr/include/a.h "app:amd64" /usr/include/b.h "unrelated, impl" /usr/lib/c.so "libalso" \
  /usr/include/d.h "" > "$tmp/used"
unlisted=$(awk -f "$scripts/lib/unlisted_files.awk" "$tmp/closure" "$tmp/used" | tr '\t\n' ': ')
expect "files of packages outside the closure are listed, unowned ones as -" "libalso:/usr/lib/c.so -:/usr/include/d.h " "$unlisted"
awk -f "$scripts/lib/unlisted_files.awk" "$tmp/closure" <(head -2 "$tmp/used") > /dev/null
expect "all files in the closure: exit 0" 0 $?

# The whole check fails, naming the package, when setup.sh's list lacks the package of a used header.
if [[ ! -f "$build/build.ninja" ]]; then
  echo "skipped: the whole check on $build (not a Ninja build)"
  exit $((failures > 0))
fi
sed 's/ libjpeg62-turbo-dev / /' "$scripts/setup.sh" > "$tmp/setup.sh"
grep -q libjpeg62-turbo-dev "$tmp/setup.sh" && { echo "FAIL the scratch setup.sh still lists libjpeg62-turbo-dev"; exit 1; }
bash "$scripts/check_setup_packages.sh" "$build" "$tmp/setup.sh" > "$tmp/out" 2>&1
rc=$?
expect "a setup.sh without libjpeg62-turbo-dev fails the check" 1 "$rc"
grep -q '^  libjpeg62-turbo-dev ' "$tmp/out" && grep -q '/jpeglib.h$' "$tmp/out"
expect "the failure names libjpeg62-turbo-dev and jpeglib.h" 0 $?
((failures == 0)) || { echo "--- check output:"; cat "$tmp/out"; }
exit $((failures > 0))
