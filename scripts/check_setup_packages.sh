#!/usr/bin/env bash
# Fails when a build used a header, a library or a CMake/pkg-config package file that no package installed by
# scripts/setup.sh provides, so that a fresh Debian machine could not configure or build what this one did.
# Usage: check_setup_packages.sh BUILD_DIR [SETUP_SH]   (SETUP_SH defaults to the setup.sh next to this script)
#
# What the build used, read from BUILD_DIR (a Ninja build; others: exit 77, skipped) after a build:
#   headers:   the compiler's dependency records (`ninja -t deps`)
#   libraries: the absolute .so/.a paths and the -l names of the link commands
#   package files: the *Config.cmake of every <Pkg>_DIR and the .pc file of every pkg_check_modules module
# Each file is mapped to its Debian package with `dpkg -S` and compared with the closure of setup.sh's list: the
# packages, the Debian base system and, recursively, their Depends (scripts/lib/package_closure.awk).
# Exempt: the CUDA toolkit under /usr/local/cuda* (NVIDIA's installer, not a Debian package), the source and the
# build tree.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: check_setup_packages.sh BUILD_DIR [SETUP_SH]}" && pwd)
setup=${2:-$here/setup.sh}
cache=$build/CMakeCache.txt
[[ -f "$cache" ]] || { echo "check_setup_packages: $cache not found (configure first)" >&2; exit 2; }
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$cache"; }
source_dir=$(cache_value CMAKE_HOME_DIRECTORY)
cxx=$(cache_value CMAKE_CXX_COMPILER)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Compile and link commands, and the headers the compiler read (paths relative to the build dir).
if [[ ! -f "$build/build.ninja" ]]; then
  echo "check_setup_packages: skipped, $build is not a Ninja build (configure with -G Ninja, as scripts/build.sh does)"
  exit 77
fi
ninja -C "$build" -t deps | sed -n 's/^  *//p' > "$tmp/headers"
ninja -C "$build" -t commands > "$tmp/commands"
[[ -s "$tmp/headers" ]] || { echo "check_setup_packages: nothing has been built in $build yet" >&2; exit 2; }

{
  cat "$tmp/headers"
  # Link commands only (compile commands carry -c): absolute libraries, and -l names the compiler resolves.
  # A -l name it cannot resolve is only found through a -L folder: the CUDA toolkit's (cudart_static, cudadevrt).
  grep -v -e ' -c ' "$tmp/commands" | tr ' ' '\n' > "$tmp/link_words" || true
  grep -E '^/.*\.(so|a)(\.[0-9.]+)?$' "$tmp/link_words" || true
  for name in $(sed -n 's/^-l//p' "$tmp/link_words" | sort -u); do
    for ext in so a; do
      file=$("$cxx" -print-file-name="lib$name.$ext")
      [[ "$file" == /* ]] && { echo "$file"; break; }
    done
  done
  for dir in $(grep -E '^[A-Za-z0-9_.+-]+_DIR:PATH=/' "$cache" | cut -d= -f2-); do
    ls "$dir"/*[Cc]onfig.cmake 2>/dev/null || true
  done
  for args in $(sed -n 's/^__pkg_config_arguments_[A-Za-z0-9_]*:INTERNAL=//p' "$cache"); do
    for module in ${args//;/ }; do
      [[ "$module" =~ ^(REQUIRED|QUIET|IMPORTED_TARGET|GLOBAL|NO_CMAKE_PATH|NO_CMAKE_ENVIRONMENT_PATH)$ ]] && continue
      pkg-config --path "${module%%[<>=]*}" || { echo "check_setup_packages: pkg-config finds no $module" >&2; exit 2; }
    done
  done
} | (cd "$build" && xargs -r realpath -s -m) | sort -u |
  grep -v -E "^(/usr/local/cuda[^/]*|$build|$source_dir)(/|$)" > "$tmp/used" || true

# Owner of each file, "<path>\t<owners>" (owners empty: none). dpkg records some files under /lib and /bin (Debian
# 12 merges them into /usr) and the alternatives system adds unowned symlinks: a path no package owns is retried
# as the other spelling, then resolved.
owners() { xargs -r dpkg -S 2>/dev/null | grep -v '^diversion' | sed 's/^\(.*\): \(\/.*\)$/\2\t\1/' || true; }
other_spelling() { sed -E 's#^/usr/(lib|lib32|lib64|bin|sbin)/#/\1/#; t; s#^/(lib|lib32|lib64|bin|sbin)/#/usr/\1/#'; }
owners < "$tmp/used" > "$tmp/path_owners"
cut -f1 "$tmp/path_owners" | sort -u | comm -13 - "$tmp/used" | while IFS= read -r path; do
  owner=
  for candidate in "$(other_spelling <<< "$path")" "$(realpath -m "$path")" "$(realpath -m "$path" | other_spelling)"; do
    owner=$(owners <<< "$candidate" | cut -f2 | head -1)
    [[ -n "$owner" ]] && break
  done
  printf '%s\t%s\n' "$path" "$owner"
done >> "$tmp/path_owners"

packages=$(bash "$setup" --list)
dpkg-query -W -f='${db:Status-Abbrev}\t${Package}\t${Essential}\t${Priority}\t${Provides}\t${Pre-Depends}, ${Depends}\n' |
  awk -v seeds="$packages" -f "$here/lib/package_closure.awk" > "$tmp/closure"
if grep -q '^missing ' "$tmp/closure"; then
  echo "check_setup_packages: setup.sh lists packages that are not installed here (run scripts/setup.sh):" \
       "$(sed -n 's/^missing //p' "$tmp/closure" | tr '\n' ' ')" >&2
  exit 1
fi

if awk -f "$here/lib/unlisted_files.awk" "$tmp/closure" "$tmp/path_owners" > "$tmp/unlisted"; then
  echo "check_setup_packages: the $(wc -l < "$tmp/used") system files $build used all come from packages" \
       "installed by $setup"
  exit 0
fi
echo "check_setup_packages: $build used files that no package installed by $setup provides;" \
     "add the package to its list:" >&2
sort "$tmp/unlisted" | awk -F'\t' '
  { n[$1]++; if (n[$1] <= 3) files[$1] = files[$1] "\n    " $2 }
  END { for (p in n) printf "  %s (%d files)%s\n", (p == "-" ? "owned by no Debian package" : p), n[p], files[p] }' >&2
exit 1
