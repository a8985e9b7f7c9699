# Compares what the build used with what setup.sh installs.
# Input 1: the package closure (one package a line; package_closure.awk's output).
# Input 2: one used file a line, "<path>\t<owners>", owners as `dpkg -S` names them ("libfoo-dev:amd64, libbar")
#          or empty when no package owns the path.
# Prints "<package>\t<path>" for each file no package of the closure owns ("-" as package: owned by none) and
# exits 1 when there was any.
BEGIN { FS = "\t"; bad = 0 }
NR == FNR { if ($0 !~ /^missing /) closure[$0] = 1; next }
{
  n = split($2, owners, ",")
  if (n == 0) { print "-\t" $1; bad = 1; next }
  ok = 0
  for (i = 1; i <= n; i++) {
    o = owners[i]; gsub(/[ \t]/, "", o); sub(/:.*/, "", o)
    if (i == 1) first = o
    if (o in closure) ok = 1
  }
  if (!ok) { print first "\t" $1; bad = 1 }
}
END { exit bad }
