package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internal/wait"
	"github.com/goshmem/goshmem/numa"
)

// Exchange methods: how a side publishes its k lines and how the other
// sees them.
const (
	// exXchg is goshmem's dropbox exchange (teamshared's seal and
	// boxReady): the data with plain stores, head line last, then the
	// round number in the head line's first word with an XCHG; the
	// reader polls that word, then reads the k lines.
	exXchg = "xchg"
	// exRelease is exXchg with the round number stored by a plain MOV
	// (mem.StoreRelease): the writer does not wait for the head line's
	// ownership.
	exRelease = "release"
	// exTagged puts the round number in the first word of every line
	// (plain stores, each line's data before its tag; x86 keeps stores
	// in order), and the reader loads every line's tag in each poll, so
	// the k lines travel in parallel rather than after the head: what
	// NCCL's LL protocol does, at 60 data bytes per line.
	exTagged = "tagged"
	// exPaired is exXchg with both of a side's boxes in one line, 32
	// bytes each (24 data bytes): what goshmem's small exchange
	// dropboxes do for parts of up to 24 bytes. Only for k = 1.
	exPaired = "paired"
)

var exchangeMethods = []string{exXchg, exRelease, exTagged, exPaired}

// exchangeStagger is how far the second side's boxes start from the
// first's beyond whole pages: their lines then differ in address bits
// 6-11, as goshmem's team slots do (job.TeamStagger), so that no load
// of one side waits on a store of the other that agrees with it in the
// low 12 bits (4 KiB aliasing).
const exchangeStagger = 1024

// runExchange measures the bare exchange of k cache lines between two
// cores, both ways at once: what a 2-PE small collective of up to
// 64k-8 bytes per member moves, with nothing else. In round r each side
// writes r into its box of k lines (one of two, by r's parity, as
// goshmem's exchange dropboxes alternate), waits until the other's box
// holds r, and reads the other's k lines. A row is the time of one
// round for k lines, the least over the methods (exchangeMethods; one
// note line per method gives each one's figure); k = 1 is the bare
// 2-PE barrier with 56 data bytes (24 in the paired way, which runs at
// k = 1 only). A goshmem 2-PE collective of b bytes
// per member moves k = ceil((b+8)/64) lines each way, so its time over
// goshmem's barrier cannot be below this table's row k over the
// barrier's time.
func runExchange(args []string) (*table, error) {
	fs := flag.NewFlagSet("exchange", flag.ContinueOnError)
	var c common
	c.register(fs, 200000, 500*time.Millisecond)
	fs.IntVar(&c.warm, "w", 10000, "warm-up rounds")
	ks := fs.String("k", "1,2,3,5,9", "comma-separated line counts (1 to 64)")
	only := fs.String("method", "", "measure only this method: "+strings.Join(exchangeMethods, ", "))
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := c.check(fs); err != nil {
		return nil, err
	}
	counts, err := lineCounts("exchange", *ks, 1, 64)
	if err != nil {
		return nil, err
	}
	methods := exchangeMethods
	if *only != "" {
		if !slices.Contains(exchangeMethods, *only) {
			return nil, fmt.Errorf("exchange: -method %q: want one of %s", *only, strings.Join(exchangeMethods, ", "))
		}
		if *only == exPaired && slices.ContainsFunc(counts, func(k int) bool { return k != 1 }) {
			return nil, fmt.Errorf("exchange: -method %s takes -k 1 only (both boxes share one line)", exPaired)
		}
		methods = []string{*only}
	}
	a, b, warnings, err := pickCPUs(c.cpus)
	if err != nil {
		return nil, err
	}
	n, d := c.perBlock()
	t := &table{
		test:     "exchange",
		warnings: warnings,
		notes: []string{fmt.Sprintf("cpus: %d and %d (threads of this process); %s of %d blocks of >= %d rounds and >= %v after %d warm-up; a row is the least over the methods",
			a, b, c.stat(), c.reps, n, d, c.warm),
			"a round: each side writes its k lines (two boxes, by the round's parity), waits for the other's and reads them; k lines carry 64k-8 bytes, as a 2-PE dropbox exchange (paired: both boxes in one line, 24 bytes each, k = 1 only)"},
		cols: [2]string{"Lines", "Round (us)"},
		prec: 4,
	}
	for _, k := range counts {
		best, per := math.Inf(1), make([]string, 0, len(methods))
		for _, m := range methods {
			if m == exPaired && k != 1 {
				continue
			}
			lat, _, err := exchangeRun(m, k, a, b, &c, false)
			if err != nil {
				return nil, err
			}
			us := c.summarize(lat, true)
			best = min(best, us)
			per = append(per, fmt.Sprintf("%s %.4f", m, us))
		}
		t.notes = append(t.notes, fmt.Sprintf("k=%d: %s", k, strings.Join(per, ", ")))
		t.rows = append(t.rows, row{strconv.Itoa(k), best})
	}
	return t, nil
}

// lineCounts parses a comma-separated list of counts from lo to hi.
func lineCounts(test, spec string, lo, hi int) ([]int, error) {
	var counts []int
	for _, f := range strings.Split(spec, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < lo || k > hi {
			return nil, fmt.Errorf("%s: -k %q: want line counts from %d to %d", test, spec, lo, hi)
		}
		counts = append(counts, k)
	}
	return counts, nil
}

// exchanger is one side of an exchange: its two boxes and the other's.
type exchanger struct {
	method      string
	k           int
	mine, other [2]mem.Base
	relax       func()
	// src is what a side publishes (its k lines' worth), dst where it
	// copies the other's part: copies (runtime memmove, wide loads and
	// stores), as goshmem's collectives move their data.
	src, dst []byte
	// check makes publish write the round into every data word of src
	// first, and read compare every data word it copied with the round
	// (tests: a method that let a reader see the round before the data
	// would measure less than an exchange); bad counts the words that
	// differed.
	check bool
	bad   int
}

// box returns the box of parity r&1 in bs.
func box(bs *[2]mem.Base, r uint32) mem.Base { return bs[r&1] }

// publish writes round r into this side's box.
func (x *exchanger) publish(r uint32) {
	b := box(&x.mine, r)
	if x.check {
		for i := 0; i+8 <= len(x.src); i += 8 {
			*(*uint64)(unsafe.Pointer(&x.src[i])) = uint64(r)
		}
	}
	switch x.method {
	case exPaired:
		copy(mem.ByteSlice(b, 8, 24), x.src[8:32])
		*mem.At[uint32](b, 4) = r
		mem.At[atomic.Uint32](b, 0).Store(r)
	case exTagged:
		for l := 0; l < x.k; l++ {
			off := uintptr(l) * 64
			copy(mem.ByteSlice(b, off+8, 56), x.src[l*64+8:l*64+64])
			*mem.At[uint32](b, off+4) = r
			mem.StoreRelease(mem.At[atomic.Uint32](b, off), r)
		}
	default:
		// The head line last, as teamshared's fill.
		copy(mem.ByteSlice(b, 64, (x.k-1)*64), x.src[64:x.k*64])
		copy(mem.ByteSlice(b, 8, 56), x.src[8:64])
		*mem.At[uint32](b, 4) = r
		if x.method == exRelease {
			mem.StoreRelease(mem.At[atomic.Uint32](b, 0), r)
		} else {
			mem.At[atomic.Uint32](b, 0).Store(r)
		}
	}
}

// ready reports whether the other side's box holds round r.
func (x *exchanger) ready(r uint32) bool {
	b := box(&x.other, r)
	if x.method != exTagged {
		return mem.At[atomic.Uint32](b, 0).Load() == r
	}
	ok := true
	for l := 0; l < x.k; l++ { // every line's tag in one pass: the misses overlap
		if mem.At[atomic.Uint32](b, uintptr(l)*64).Load() != r {
			ok = false
		}
	}
	return ok
}

// read copies the other side's k lines of round r (from its head's
// data on).
func (x *exchanger) read(r uint32) {
	b := box(&x.other, r)
	n := x.k*64 - 8
	if x.method == exPaired {
		n = 24
	}
	copy(x.dst[:n], mem.ByteSlice(b, 8, n))
	if !x.check {
		return
	}
	for i := 0; i+8 <= n; i += 8 {
		if (i+8)%64 != 0 && *(*uint64)(unsafe.Pointer(&x.dst[i])) != uint64(r) { // (not a tagged line's tag and header)
			x.bad++
		}
	}
}

// round runs round r: publish, wait (false when stop was set), read.
func (x *exchanger) round(r uint32, stop *atomic.Bool) bool {
	x.publish(r)
	for !x.ready(r) {
		if stop.Load() {
			return false
		}
		x.relax()
	}
	x.read(r)
	return true
}

// exchangeRun returns the round time of each of c.reps blocks of method
// m with k lines, in microseconds; with check, both sides compare every
// data word they read with the round, and bad is how many differed.
func exchangeRun(m string, k, a, b int, c *common, check bool) (lat []float64, bad int, err error) {
	// A box's lines, rounded up to an even count, then a 128-byte gap:
	// the two boxes of a side never share a pair of lines, which the
	// adjacent-line prefetcher fetches together (goshmem's two exchange
	// dropboxes are 640 bytes apart).
	boxBytes := (k*64+127)&^127 + 128
	side := (2*boxBytes + 4095) &^ 4095
	buf, err := sys.MmapAnon(2*side + exchangeStagger + 4096)
	if err != nil {
		return nil, 0, err
	}
	defer sys.Munmap(buf)
	base := mem.RegionOf(buf).Base
	at := func(off int) mem.Base { return mem.Base(mem.At[byte](base, uintptr(off))) }
	relax := wait.Relax
	if a == b { // on one CPU the two sides take turns: a waiter yields it
		relax = func() { sys.SchedYield() }
	}
	x0 := &exchanger{method: m, k: k, relax: relax, check: check, src: make([]byte, k*64), dst: make([]byte, k*64)}
	x1 := &exchanger{method: m, k: k, relax: relax, check: check, src: make([]byte, k*64), dst: make([]byte, k*64)}
	stride := boxBytes
	if m == exPaired {
		stride = 32
	}
	for p := 0; p < 2; p++ {
		x0.mine[p] = at(p * stride)
		x1.mine[p] = at(side + exchangeStagger + p*stride)
	}
	x0.other, x1.other = x1.mine, x0.mine
	n, d := c.perBlock()
	var stop, gone atomic.Bool
	otherErr := make(chan error, 1)
	go func() {
		otherErr <- onLockedThread(func() error {
			defer gone.Store(true)
			if err := numa.Bind([]int{b}); err != nil {
				return err
			}
			for r := uint32(1); x1.round(r, &stop); r++ {
			}
			return nil
		})
	}()
	lat = make([]float64, c.reps)
	err = onLockedThread(func() error {
		if err := numa.Bind([]int{a}); err != nil {
			return err
		}
		var r uint32
		chunk := func(n int) error {
			for range n {
				r++
				if !x0.round(r, &gone) {
					return errors.New("exchange: the other side stopped")
				}
			}
			return nil
		}
		if err := chunk(c.warm); err != nil {
			return err
		}
		for i := range lat {
			iters, el, err := timeBlock(n, d, chunk)
			if err != nil {
				return err
			}
			lat[i] = el.Seconds() / float64(iters) * 1e6
		}
		return nil
	})
	stop.Store(true)
	if oerr := <-otherErr; err == nil {
		err = oerr
	}
	return lat, x0.bad + x1.bad, err
}
