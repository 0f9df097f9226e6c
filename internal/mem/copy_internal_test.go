package mem

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// testPlans are the plans the tests run, one per kernel, whatever
// DefaultCopyPlan picks on this machine: each forces one of REP MOVSB,
// the AVX2 temporal loop, the non-temporal loop and memmove for every
// size it serves (and this machine's own plan). Plans that need AVX2
// are left out where the CPU lacks it.
func testPlans(t testing.TB) map[string]CopyPlan {
	avx2 := cpuFeatures().avx2
	plans := map[string]CopyPlan{
		"default": DefaultCopyPlan(),
		"memmove": {},
		"movsb":   {RepMovsb: true},
	}
	if avx2 {
		plans["avx2"] = CopyPlan{AVX2: true}
		plans["nt"] = CopyPlan{AVX2: true, NTThreshold: 1}
		plans["movsb+nt"] = CopyPlan{AVX2: true, RepMovsb: true, NTThreshold: ntMin}
	} else {
		t.Logf("no AVX2 on this CPU: the AVX2 and non-temporal kernels are not tested")
	}
	return plans
}

// randSize returns a copy length up to about limit, biased to the edges where
// kernels switch or round (limit is the bound of the uniform case): around LargeCopy, ntMin, 64-byte and
// 128-byte multiples.
func randSize(r *rand.Rand, limit int) int {
	switch r.IntN(4) {
	case 0:
		return r.IntN(limit + 1)
	case 1:
		return LargeCopy - 130 + r.IntN(260)
	case 2:
		return ntMin - 130 + r.IntN(260)
	default:
		return max(r.IntN(limit/128+1)*128+r.IntN(5)-2, 0)
	}
}

// checkCopy runs p.Copy(dst[do:do+n], src[so:so+n]) into a dst full of
// noise and compares every byte of dst, guards included, with what the
// built-in copy leaves.
func checkCopy(t testing.TB, name string, p CopyPlan, src []byte, n, so, do int) {
	t.Helper()
	dst := make([]byte, n+128)
	for i := range dst {
		dst[i] = byte(i*7 + 3)
	}
	want := bytes.Clone(dst)
	copy(want[do:do+n], src[so:so+n])
	if got := p.Copy(dst[do:do+n], src[so:so+n]); got != n {
		t.Fatalf("%s: Copy of %d bytes returned %d", name, n, got)
	}
	if i := firstDiff(dst, want); i >= 0 {
		t.Fatalf("%s: n %d, src offset %d, dst offset %d: byte %d of dst is %#x, copy gives %#x", name, n, so, do, i-do, dst[i], want[i])
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestCopyRandom compares Copy under every plan with the built-in copy
// on random sizes from 0 to 3 MiB and every source and destination
// offset modulo 64.
func TestCopyRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 1))
	const maxN = 3 << 20
	src := randBytes(r, maxN+64)
	iters := 120
	if testing.Short() {
		iters = 40
	}
	for name, p := range testPlans(t) {
		for range iters {
			n := min(randSize(r, maxN), maxN)
			checkCopy(t, name, p, src, n, r.IntN(64), r.IntN(64))
		}
	}
}

// TestCopyKernels runs each assembly kernel directly on every length
// from its minimum, 256 bytes, to 256+320 and every alignment of source
// and destination modulo 64: the head, tail and remainder cases.
func TestCopyKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 2))
	src := randBytes(r, 1024)
	kernels := map[string]CopyPlan{"movsb": {RepMovsb: true}}
	if cpuFeatures().avx2 {
		kernels["avx2"] = CopyPlan{AVX2: true}
		kernels["nt"] = CopyPlan{AVX2: true, NTThreshold: 1}
	}
	for name, p := range kernels {
		for n := 256; n <= 256+320; n++ {
			for _, so := range []int{0, 1, 31, 32, 63} {
				for do := range 64 {
					dst := make([]byte, n+128)
					want := bytes.Clone(dst)
					copy(want[do:do+n], src[so:so+n])
					copyPlanned(&p, unsafe.Pointer(&dst[do]), unsafe.Pointer(&src[so]), uintptr(n))
					if i := firstDiff(dst, want); i >= 0 {
						t.Fatalf("%s: n %d, src offset %d, dst offset %d: byte %d wrong", name, n, so, do, i-do)
					}
				}
			}
		}
	}
}

// TestCopyOverlap copies between overlapping ranges of one buffer, in
// both directions: Copy must give what the built-in copy (memmove)
// gives.
func TestCopyOverlap(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 3))
	const size = 1 << 20
	buf0 := randBytes(r, size)
	for name, p := range testPlans(t) {
		for range 60 {
			n := LargeCopy + r.IntN(size-LargeCopy-64)
			so, do := r.IntN(size-n+1), r.IntN(size-n+1)
			if r.IntN(4) == 0 {
				do = so + r.IntN(130) - 65 // near: overlapping by almost all of it
				do = min(max(do, 0), size-n)
			}
			buf := bytes.Clone(buf0)
			want := bytes.Clone(buf)
			copy(want[do:do+n], want[so:so+n])
			p.Copy(buf[do:do+n], buf[so:so+n])
			if i := firstDiff(buf, want); i >= 0 {
				t.Fatalf("%s: n %d from %d to %d: byte %d wrong", name, n, so, do, i)
			}
		}
	}
}

// TestCopyLengths checks that Copy copies min(len(dst), len(src)) and
// returns that count, as copy does.
func TestCopyLengths(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 4))
	src := randBytes(r, 2*LargeCopy)
	for _, c := range []struct{ nd, ns int }{
		{0, 0}, {0, 10}, {10, 0}, {LargeCopy, 2 * LargeCopy}, {2 * LargeCopy, LargeCopy + 1}, {LargeCopy - 1, 2 * LargeCopy},
	} {
		dst := make([]byte, c.nd)
		want := make([]byte, c.nd)
		wn := copy(want, src[:c.ns])
		if n := Copy(dst, src[:c.ns]); n != wn || !bytes.Equal(dst, want) {
			t.Errorf("Copy(len %d, len %d) = %d (equal %v), want %d", c.nd, c.ns, n, bytes.Equal(dst, want), wn)
		}
	}
	if n := Copy(nil, nil); n != 0 {
		t.Errorf("Copy(nil, nil) = %d", n)
	}
}

// FuzzCopy compares Copy under a plan the fuzzer picks with the
// built-in copy, for lengths, offsets and overlaps it picks.
func FuzzCopy(f *testing.F) {
	f.Add([]byte("seed"), uint32(LargeCopy), uint8(0), uint8(0), uint8(0), false)
	f.Add([]byte{1, 2, 3}, uint32(ntMin+77), uint8(5), uint8(60), uint8(2), false)
	f.Add([]byte{9}, uint32(LargeCopy+1), uint8(3), uint8(1), uint8(3), true)
	f.Add([]byte{}, uint32(100), uint8(0), uint8(0), uint8(1), true)
	plans := testPlans(f)
	names := make([]string, 0, len(plans))
	for _, k := range []string{"default", "memmove", "movsb", "avx2", "nt", "movsb+nt"} {
		if _, ok := plans[k]; ok {
			names = append(names, k)
		}
	}
	f.Fuzz(func(t *testing.T, seed []byte, n32 uint32, so8, do8, plan uint8, inPlace bool) {
		n := int(n32 % (ntMin + 4*LargeCopy))
		so, do := int(so8%64), int(do8%64)
		name := names[int(plan)%len(names)]
		p := plans[name]
		src := make([]byte, n+128)
		for i := range src {
			src[i] = byte(i) ^ byte(i>>8)
			if len(seed) > 0 {
				src[i] += seed[i%len(seed)]
			}
		}
		if !inPlace {
			checkCopy(t, name, p, src, n, so, do)
			return
		}
		want := bytes.Clone(src)
		copy(want[do:do+n], want[so:so+n])
		p.Copy(src[do:do+n], src[so:so+n])
		if i := firstDiff(src, want); i >= 0 {
			t.Fatalf("%s: in place, n %d from %d to %d: byte %d wrong", name, n, so, do, i)
		}
	})
}

func TestPlanCopy(t *testing.T) {
	for _, c := range []struct {
		avx2, erms, fsrm bool
		llc              int64
		wantNT           uintptr
		wantMovsb        bool
	}{
		{true, true, true, 32 << 20, 8 << 20, true},    // EPYC: 32 MiB L3
		{true, true, false, 48 << 20, 12 << 20, false}, // ERMS without FSRM: the AVX2 loop
		{true, false, false, 512 << 10, ntMin, false},  // a small LLC: never below ntMin
		{true, true, true, 0, 0, true},                 // cache size unknown: never streaming
		{false, true, true, 32 << 20, 0, true},         // no AVX2: no streaming loop
	} {
		p := PlanCopy(c.avx2, c.erms, c.fsrm, c.llc, 2)
		if p.NTThreshold != c.wantNT || p.RepMovsb != c.wantMovsb || p.AVX2 != c.avx2 {
			t.Errorf("PlanCopy(avx2 %v, erms %v, fsrm %v, llc %d) = %+v, want NTThreshold %d, RepMovsb %v", c.avx2, c.erms, c.fsrm, c.llc, p, c.wantNT, c.wantMovsb)
		}
	}
}

// TestCopyMethod checks which kernel a plan picks at the edges: the
// built-in copy below LargeCopy, temporal stores up to NTThreshold
// bytes (a copy of a quarter of the last-level cache, whose source and
// destination fill half of it, included), non-temporal stores above.
func TestCopyMethod(t *testing.T) {
	epyc := PlanCopy(true, true, true, 32<<20, 2) // Zen 4: 32 MiB L3, ERMS, FSRM
	noFSRM := PlanCopy(true, true, false, 32<<20, 2)
	noAVX2 := PlanCopy(false, true, true, 32<<20, 2)
	for _, c := range []struct {
		name string
		p    CopyPlan
		n    int
		want string
	}{
		{"epyc below LargeCopy", epyc, LargeCopy - 1, "memmove"},
		{"epyc at LargeCopy", epyc, LargeCopy, "movsb"},
		{"epyc 4 MiB", epyc, 4 << 20, "movsb"},
		{"epyc 8 MiB (LLC/4)", epyc, 8 << 20, "movsb"},
		{"epyc 8 MiB + 1", epyc, 8<<20 + 1, "nt"},
		{"epyc 64 MiB", epyc, 64 << 20, "nt"},
		{"no FSRM 1 MiB", noFSRM, 1 << 20, "avx2"},
		{"no FSRM 8 MiB", noFSRM, 8 << 20, "avx2"},
		{"no FSRM 16 MiB", noFSRM, 16 << 20, "nt"},
		{"no AVX2 64 MiB", noAVX2, 64 << 20, "movsb"},
		{"memmove plan", CopyPlan{}, 64 << 20, "memmove"},
	} {
		if got := c.p.Method(c.n); got != c.want {
			t.Errorf("%s: Method(%d) = %q, want %q (plan %+v)", c.name, c.n, got, c.want, c.p)
		}
	}
}

func TestSysfsLLC(t *testing.T) {
	dir := t.TempDir()
	write := func(idx int, level, typ, size, cpus string) {
		d := filepath.Join(dir, fmt.Sprintf("index%d", idx))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]string{"level": level, "type": typ, "size": size, "shared_cpu_list": cpus} {
			if err := os.WriteFile(filepath.Join(d, name), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if size, share := sysfsLLC(dir); size != 0 || share != 0 {
		t.Errorf("empty dir: %d, %d", size, share)
	}
	write(0, "1", "Data", "32K", "0")
	write(1, "1", "Instruction", "32K", "0")
	write(2, "2", "Unified", "1024K", "0")
	write(3, "3", "Unified", "32768K", "0-3,8,10-11")
	write(4, "4", "Instruction", "64M", "0-63") // not a data cache
	if size, share := sysfsLLC(dir); size != 32<<20 || share != 7 {
		t.Errorf("sysfsLLC = %d, %d; want %d, 7", size, share, 32<<20)
	}
	for s, want := range map[string]int64{"32768K": 32 << 20, "1M": 1 << 20, "2G": 2 << 30, "512": 512, "": 0, "K": 0, "-1K": 0,
		"9007199254740992K": 0, "8796093022207K": 8796093022207 << 10, "9223372036854775807": 9223372036854775807} { // overflow refused, not negative
		if got, ok := parseSize(s); got != want || ok != (want > 0) {
			t.Errorf("parseSize(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for s, want := range map[string]int{"0": 1, "0-1": 2, "0-3,8,10-11": 7, "": 0, "3-1": 0, "x": 0,
		"0-9223372036854775807": 0, "-5": 0, "0-1048575": 1 << 20, "0-1048575,1048576": 0} { // beyond any machine: unknown, not negative
		if got := countCPUs(s); got != want {
			t.Errorf("countCPUs(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestCopyKernelUngated checks CopyKernel, which runs a plan's kernel
// from 256 bytes (below LargeCopy too), against the built-in copy.
func TestCopyKernelUngated(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 5))
	src := randBytes(r, 3*LargeCopy)
	for name, p := range testPlans(t) {
		for _, n := range []int{0, 1, 255, 256, 257, 1000, 4096 + 3, LargeCopy + 1} {
			dst := make([]byte, n+64)
			want := make([]byte, n+64)
			copy(want[5:5+n], src[3:3+n])
			if got := p.CopyKernel(dst[5:5+n], src[3:3+n]); got != n || !bytes.Equal(dst, want) {
				t.Errorf("%s: CopyKernel of %d bytes: returned %d, equal %v", name, n, got, bytes.Equal(dst, want))
			}
		}
		buf := bytes.Clone(src)
		want := bytes.Clone(src)
		copy(want[1:4001], want[:4000])
		p.CopyKernel(buf[1:4001], buf[:4000])
		if !bytes.Equal(buf, want) {
			t.Errorf("%s: CopyKernel between overlapping ranges differs from copy", name)
		}
	}
}
