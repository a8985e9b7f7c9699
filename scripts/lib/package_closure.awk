# Prints the Debian packages that installing the seed packages brings in: the seeds, the base system (Essential or
# Priority: required, present on every Debian install) and, recursively, what they Depend or Pre-Depend on.
#
# Input (tab-separated), one installed package a line, as written by
#   dpkg-query -W -f='${db:Status-Abbrev}\t${Package}\t${Essential}\t${Priority}\t${Provides}\t${Pre-Depends}, ${Depends}\n'
# Seeds: -v seeds="pkg1 pkg2 ...". A seed that is not installed is printed as "missing <name>" (its dependencies
# are unknown here).
#
# Of the alternatives of one dependency ("a | b"), only the first one satisfied here counts: that is the one apt
# picks on a fresh system too, so a package that is merely also installed does not hide a missing one. A virtual
# name counts through the installed packages that Provide it.
function bare(name) {                      # "libfoo-dev:any (>= 1.2)" -> "libfoo-dev"
  gsub(/\(.*\)|\[.*\]|<.*>/, "", name)
  gsub(/[ \t]/, "", name)
  sub(/:.*/, "", name)
  return name
}
function add(name) {
  if (!(name in reached)) { reached[name] = 1; queue[++tail] = name }
}
function satisfy(name,    n, i, p) {       # adds what satisfies `name` here; returns 0 when nothing does
  if (name in deps) { add(name); return 1 }
  if (!(name in providers)) return 0
  n = split(providers[name], p, " ")
  for (i = 1; i <= n; i++) add(p[i])
  return 1
}
BEGIN { FS = "\t" }
$1 == "ii " {
  deps[$2] = $6
  if ($3 == "yes" || $4 == "required") base[$2] = 1
  n = split($5, provided, ",")
  for (i = 1; i <= n; i++) { v = bare(provided[i]); if (v != "") providers[v] = providers[v] " " $2 }
}
END {
  head = 1; tail = 0
  for (b in base) add(b)
  n = split(seeds, s, " ")
  for (i = 1; i <= n; i++) if (!satisfy(s[i])) print "missing " s[i]
  while (head <= tail) {
    pkg = queue[head++]
    nclauses = split(deps[pkg], clause, ",")
    for (c = 1; c <= nclauses; c++) {
      nalt = split(clause[c], alt, "|")
      for (a = 1; a <= nalt; a++) { name = bare(alt[a]); if (name != "" && satisfy(name)) break }
    }
  }
  for (pkg in reached) print pkg
}
