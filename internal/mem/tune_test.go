package mem

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestTunerCopies checks that a Tuner copies like the built-in copy at
// random sizes around and inside its band, both kernels included, and
// that in the band both kernels ran.
func TestTunerCopies(t *testing.T) {
	if !cpuFeatures().avx2 {
		t.Skip("no AVX2 on this CPU: no non-temporal kernel, so the Tuner has no band")
	}
	// A small band, (128 KiB, 256 KiB], so that many copies fit a test.
	p := CopyPlan{AVX2: true, RepMovsb: cpuFeatures().fsrm, NTThreshold: 256 << 10}
	tu := NewTuner(p, true)
	if lo, hi := tu.Band(); lo != 128<<10 || hi != 256<<10 {
		t.Fatalf("Band() = %d, %d; want %d, %d", lo, hi, 128<<10, 256<<10)
	}
	if lo, hi := NewSharedTuner(p, true).Band(); lo != 128<<10 || hi != 512<<10 {
		t.Fatalf("shared Band() = %d, %d; want %d, %d", lo, hi, 128<<10, 512<<10)
	}
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, 600<<10)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	dst := make([]byte, len(src))
	for i := 0; i < 400; i++ {
		var n int
		switch r.IntN(3) {
		case 0:
			n = r.IntN(len(src) - 64)
		default:
			n = 128<<10 + 1 + r.IntN(128<<10) // in the band
		}
		so, do := r.IntN(64), r.IntN(64)
		for j := range dst {
			dst[j] = byte(j*7 + 3)
		}
		want := bytes.Clone(dst)
		copy(want[do:do+n], src[so:so+n])
		if got := tu.Copy(dst[do:do+n], src[so:so+n]); got != n {
			t.Fatalf("Copy of %d bytes returned %d", n, got)
		}
		if !bytes.Equal(dst, want) {
			t.Fatalf("Copy of %d bytes (src+%d, dst+%d) differs from copy", n, so, do)
		}
	}
	// Overlapping ranges in the band: memmove's semantics.
	for _, shift := range []int{-4096, -1, 1, 4096} {
		buf := bytes.Clone(src)
		want := bytes.Clone(src)
		n := 200 << 10
		a, b := 100<<10, 100<<10+shift
		copy(want[a:a+n], want[b:b+n])
		tu.Copy(buf[a:a+n], buf[b:b+n])
		if !bytes.Equal(buf, want) {
			t.Fatalf("overlapping Copy (shift %d) differs from copy", shift)
		}
	}
	if s0, s1 := tu.bands[0].seen[0].Load(), tu.bands[0].seen[1].Load(); s0 == 0 || s1 == 0 {
		t.Errorf("after %d copies in the band, timed copies per kernel: temporal %d, streaming %d; want both", tu.bands[0].copies.Load(), s0, s1)
	}
}

// TestSharedTunerClasses checks a shared Tuner's two classes: the
// lower one starts with its bursts and chooses by its own copies; the
// upper one (above the threshold) picks streaming stores untimed until
// its tuneSharedFirst-th copy, whatever the lower one's copies did, and
// then bursts with temporal ones.
func TestSharedTunerClasses(t *testing.T) {
	p := CopyPlan{AVX2: true, NTThreshold: 256 << 10}
	tu := NewSharedTuner(p, true)
	lower, upper := 200<<10, 400<<10
	for i := range 100 {
		c := tu.Pick(lower)
		if c.b != 0 {
			t.Fatalf("Pick(%d) in class %d, want 0", lower, c.b)
		}
		// Temporal copies modelled 4x dearer: the lower class must
		// choose streaming stores after its opening bursts.
		d := time.Duration(lower)
		if !c.NT {
			d *= 4
		}
		tu.Done(c, d)
		if i >= 20 && i < 80 && !c.NT {
			t.Fatalf("copy %d of the lower class: temporal between the opening bursts and the next; want streaming", i)
		}
	}
	if tu.bands[0].chosen.Load() != 1 {
		t.Errorf("lower class chose %d after temporal copies 4x dearer; want 1 (streaming)", tu.bands[0].chosen.Load())
	}
	for i := range tuneSharedFirst {
		c := tu.Pick(upper)
		if c.b != 1 || !c.NT {
			t.Fatalf("copy %d of the upper class: class %d, NT %v; want class 1, streaming", i, c.b, c.NT)
		}
		tu.Done(c, time.Duration(upper))
	}
	if c := tu.Pick(upper); c.NT {
		t.Errorf("copy %d of the upper class: streaming; want the first copy of a temporal burst", tuneSharedFirst)
	}
	if s0 := tu.bands[1].seen[0].Load(); s0 != 0 {
		t.Errorf("upper class timed %d temporal copies before its first burst; want 0", s0)
	}
}

// TestTunerOff checks that a Tuner made with adapt false, or over a
// plan without a non-temporal threshold, has no band and copies as its
// plan does.
func TestTunerOff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     CopyPlan
		adapt bool
	}{
		{"adapt off", CopyPlan{AVX2: true, NTThreshold: 8 << 20}, false},
		{"no threshold", CopyPlan{AVX2: true}, true},
		{"threshold too small", CopyPlan{AVX2: true, NTThreshold: LargeCopy}, true},
	} {
		tu := NewTuner(tc.p, tc.adapt)
		if lo, hi := tu.Band(); lo != 0 || hi != 0 {
			t.Errorf("%s: Band() = %d, %d; want 0, 0", tc.name, lo, hi)
		}
		if lo, hi := NewSharedTuner(tc.p, tc.adapt).Band(); lo != 0 || hi != 0 {
			t.Errorf("%s: shared Band() = %d, %d; want 0, 0", tc.name, lo, hi)
		}
		for _, n := range []int{100, LargeCopy, 1 << 20, 16 << 20} {
			if got, want := tu.Kernel(n), tc.p.Method(n); got != want {
				t.Errorf("%s: Kernel(%d) = %s; want the plan's %s", tc.name, n, got, want)
			}
		}
	}
}

// tuneModel is a copy whose cost the test decides: base[k] ns per byte
// for kernel k, times noise, and for a temporal copy after streaming
// ones a penalty that fades over eight copies (the cache refilling), as
// measured on the development machine (tune.go).
type tuneModel struct {
	base    [2]float64
	noise   float64
	sinceNT int // temporal copies since the last streaming one
	r       *rand.Rand
}

func (m *tuneModel) cost(k uint32) float64 {
	x := m.base[k] * (1 + m.noise*(2*m.r.Float64()-1))
	if k == 1 {
		m.sinceNT = 0
	} else {
		if m.sinceNT < 8 {
			x *= 1 + 0.8*float64(8-m.sinceNT)/8
		}
		m.sinceNT++
	}
	return x
}

// run makes n copies through the band's choice with the model's costs
// and returns how many used each kernel.
func (m *tuneModel) run(c *tuneBand, next *uint64, n int) [2]int {
	var used [2]int
	for range n {
		k, s := c.pick(*next)
		*next++
		x := m.cost(k)
		if s != untimed {
			c.record(k, x, s)
		}
		used[k]++
	}
	return used
}

// TestTunerChooses drives the band's choice with modelled costs, on
// random pairs of costs with a clear winner (one at least 15% cheaper):
// after a few thousand copies it must have chosen the cheaper kernel (a
// naive reference: the lower base cost) and spent at most 3% of the
// last stretch on the other; when the costs trade places it must follow
// within a few periods.
func TestTunerChooses(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		a := 0.02 + 0.06*r.Float64()
		b := a * (1.15 + 1.5*r.Float64())
		if r.IntN(2) == 0 {
			a, b = b, a
		}
		m := &tuneModel{base: [2]float64{a, b}, noise: 0.05, r: r}
		var c tuneBand
		var i uint64
		m.run(&c, &i, 3000)
		want := uint32(0)
		if m.base[1] < m.base[0] {
			want = 1
		}
		if got := c.chosen.Load(); got != want {
			t.Fatalf("trial %d: costs temporal %.4f, streaming %.4f: chose %d after 3000 copies, want %d (running costs %v)",
				trial, m.base[0], m.base[1], got, want, costs(&c))
		}
		used := m.run(&c, &i, 2048)
		if other := used[1-want]; other > 2048*3/100 {
			t.Errorf("trial %d: %d of 2048 copies used the dearer kernel, want at most 3%%", trial, other)
		}
		// The costs trade places: the choice follows within 3 of the
		// longest periods.
		m.base[0], m.base[1] = m.base[1], m.base[0]
		m.run(&c, &i, 3*tuneMaxPeriod)
		if got := c.chosen.Load(); got != 1-want {
			t.Fatalf("trial %d: after the costs traded places and %d copies, chose %d, want %d (running costs %v)",
				trial, 3*tuneMaxPeriod, got, 1-want, costs(&c))
		}
	}
}

func costs(c *tuneBand) [2]float64 {
	return [2]float64{math.Float64frombits(c.cost[0].Load()), math.Float64frombits(c.cost[1].Load())}
}

func TestCopyPlanDescribe(t *testing.T) {
	for _, tc := range []struct {
		p     CopyPlan
		adapt bool
		want  string
	}{
		{CopyPlan{}, true, "the built-in copy at every size"},
		{CopyPlan{RepMovsb: true}, true, "the built-in copy below 64 KiB, REP MOVSB above"},
		{CopyPlan{AVX2: true, RepMovsb: true, NTThreshold: 8 << 20}, false,
			"the built-in copy below 64 KiB, REP MOVSB up to 8 MiB, non-temporal AVX2 stores above"},
		{CopyPlan{AVX2: true, RepMovsb: true, NTThreshold: 8 << 20}, true,
			"the built-in copy below 64 KiB, REP MOVSB up to 8 MiB, non-temporal AVX2 stores above; puts and gets above 4 MiB up to 8 MiB (shared ones up to 16 MiB) choose between the two by timing (SHMEM_COPY_ADAPT)"},
		{CopyPlan{AVX2: true, NTThreshold: 3 << 19}, true,
			"the built-in copy below 64 KiB, a temporal AVX2 loop up to 1536 KiB, non-temporal AVX2 stores above; puts and gets above 768 KiB up to 1536 KiB (shared ones up to 3 MiB) choose between the two by timing (SHMEM_COPY_ADAPT)"},
	} {
		if got := tc.p.Describe(tc.adapt); got != tc.want {
			t.Errorf("%+v.Describe(%v) =\n%q\nwant\n%q", tc.p, tc.adapt, got, tc.want)
		}
	}
}

// TestCopyKind: CopyKind copies like copy with either kernel, at random
// sizes and offsets from below LargeCopy up; and a plan without AVX2
// never takes the non-temporal loop, whatever nt says (it would fault
// on such a CPU).
func TestCopyKind(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 4))
	buf := make([]byte, 3<<20)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	for range 200 {
		n := rng.IntN(2 << 20)
		so, do := rng.IntN(1<<19), rng.IntN(1<<19)
		src := buf[so : so+n]
		dst := make([]byte, n+do)[do:]
		nt := rng.IntN(2) == 0
		if got := CopyKind(dst, src, nt); got != n || !bytes.Equal(dst, src) {
			t.Fatalf("CopyKind(%d bytes, src+%d, dst+%d, nt %v) = %d or differs from copy", n, so, do, nt, got)
		}
	}
	for _, p := range []CopyPlan{{}, {RepMovsb: true, NTThreshold: 1 << 20}} {
		if k := kindPlan(p, true); k.kernel(8<<20) == kNT {
			t.Errorf("kindPlan(%+v, nt) copies with the non-temporal loop without AVX2", p)
		}
	}
	if k := kindPlan(CopyPlan{AVX2: true}, true); k.kernel(LargeCopy) != kNT {
		t.Errorf("kindPlan(AVX2, nt) does not stream")
	}
}
