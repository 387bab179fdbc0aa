# Shared awk functions of the benchmark summaries; prepended to their
# programs: awk "$(cat benchmarks/lib/stats.awk) ...program...".

# Median of the numbers in the space-separated string `s`.
function median(s,   a, n, i, j, t) {
  n = split(s, a, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

# A byte count as "8 B", "4 KiB", "16 MiB".
function human(b) { return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b " B" }

# The keys of `set` as numbers in ascending order in list[1..n]; returns n.
function sortedKeys(set, list,   n, k, i, j, t) {
  n = 0
  for (k in set) list[++n] = k + 0
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (list[j] < list[i]) { t = list[i]; list[i] = list[j]; list[j] = t }
  return n
}
