# ratios.awk: the verbs performance targets from perf.sh's "FIG round
# name value" lines: per round the ratio of two figures of that round
# (adjacent runs), then the median over the rounds and their spread.
# Used by guest.sh (GUEST_PERF).

function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}

# target NAME NUM DEN OP LIMIT: the row of one target (OP "<=" or ">=";
# LIMIT 0 for an informative row).
function target(name, num, den, op, limit,    r, n, a, m, lo, hi, st) {
	n = 0
	for (r = 1; r <= rounds; r++)
		if ((r, num) in v && (r, den) in v && v[r, den] > 0) a[++n] = v[r, num] / v[r, den]
	if (n == 0) { printf "| %s | - | - | %s %s | NO DATA |\n", name, op, limit; bad++; return }
	lo = hi = a[1]
	for (r = 2; r <= n; r++) { if (a[r] < lo) lo = a[r]; if (a[r] > hi) hi = a[r] }
	m = median(a, n)
	st = "(informative)"
	if (limit > 0) st = (op == "<=" ? m <= limit : m >= limit) ? "PASS" : "MISS"
	printf "| %s | %.2f | %.2f-%.2f (%d rounds) | %s %s | %s |\n", name, m, lo, hi, n, op, (limit > 0 ? limit : "-"), st
}

# A figure that is not a positive finite number (perftest printed "inf"
# once) is no figure.
$1 == "FIG" && $4 + 0 > 0 && $4 + 0 < 1e300 { v[$2, $3] = $4; if ($2 > rounds) rounds = $2; seen[$3] = 1 }

END {
	print "| target | ratio | spread | wants | status |"
	print "|---|---|---|---|---|"
	target("put ping-pong 8 B over verbs vs ib_write_lat", "pp-verbs-8", "writelat-8", "<=", 1.3)
	for (s = 1048576; s <= 4194304; s *= 4)
		target("put bandwidth " s / 1048576 " MiB over verbs vs ib_write_bw", "bw-verbs-" s, "writebw-" s, ">=", 0.8)
	target("fetch-add over verbs vs ib_atomic_lat", "fadd-verbs-8", "atomiclat-8", "<=", 0)
	target("put ping-pong 8 B over verbs vs over tcp", "pp-verbs-8", "pp-tcp-8", "<=", 0)
	target("put ping-pong 8 B over verbs vs ib_send_lat", "pp-verbs-8", "sendlat-8", "<=", 0)
	target("ib_send_lat vs ib_write_lat", "sendlat-8", "writelat-8", "<=", 0)
	target("Go RC ping-pong (TestRCPingPong) vs ib_write_lat", "rcpp-8", "writelat-8", "<=", 0)
	target("put ping-pong 8 B over verbs vs Go RC ping-pong", "pp-verbs-8", "rcpp-8", "<=", 0)
	target("Go RC ping-pong across 2 processes vs in 1", "rcpp2-8", "rcpp-8", "<=", 0)
	target("put ping-pong 8 B over verbs vs Go RC ping-pong across 2 processes", "pp-verbs-8", "rcpp2-8", "<=", 0)
	for (s = 4096; s <= 1048576; s *= 2)
		target("put ping-pong " s " B: verbs time vs tcp time", "pp-verbs-" s, "pp-tcp-" s, "<=", 0.999)
	for (s = 4096; s <= 4194304; s *= 2)
		target("put bandwidth " s " B: verbs vs tcp", "bw-verbs-" s, "bw-tcp-" s, ">=", 1.001)
	print ""
	print "| figure | per round |"
	print "|---|---|"
	for (k in seen) {
		line = ""
		for (r = 1; r <= rounds; r++) line = line sprintf(" r%d %s", r, ((r, k) in v ? v[r, k] : "-"))
		print "| " k " |" line " |"
	}
}
