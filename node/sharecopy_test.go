package node_test

// Shared copies across processes and goroutine PEs: a large put or get
// whose buffers are symmetric is copied by its caller and the partner
// waiting meanwhile (SHMEM_COPY_SHARE); the bytes must be those of a
// plain copy, whoever copied which chunk.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
)

func init() {
	scenarios["sharecopy"] = scenarioShareCopy
}

// shareByte is byte k of the source of iteration i.
func shareByte(i, k int) byte { return byte(k*7 + i*13 + k>>9) }

// scenarioShareCopy: 2 PEs. In each iteration both draw the same plan
// (seeded alike): who calls, put or get, from a symmetric or a private
// buffer, the size (64 KiB to 5 MiB, spread evenly over the powers of
// two: from SHMEM_COPY_SHARE's default up, through every size class
// that chooses by timing, to copies that are always shared) and
// unaligned offsets. The source's owner fills it, the
// destination's owner fills its whole buffer with a guard byte, and
// after a barrier the caller copies while the other PE waits for a
// flag the caller then sets: the waiting PE may take chunks of the
// copy. The destination's owner checks every byte of its buffer. It
// runs at least 40 iterations, and until a chunk has been stolen or 20
// s have passed, and prints how many chunks this PE ran of the other's
// copies.
func scenarioShareCopy(pe *goshmem.PE) {
	const maxN, slack = 5 << 20, 8 << 10 // (the test's heap: 32 MiB)
	me := pe.MyPE()
	if pe.NPEs() != 2 {
		fail(pe, "sharecopy needs 2 PEs, has %d", pe.NPEs())
	}
	other := 1 - me
	c := pe.Ctx()
	src, _ := goshmem.Malloc[byte](pe, maxN+slack)
	dst, _ := goshmem.Malloc[byte](pe, maxN+slack)
	stolen, _ := goshmem.Calloc[int64](pe, 1) // PE 0's: chunks stolen by both, after each iteration
	flag, _ := goshmem.Calloc[int64](pe, 1)
	private := make([]byte, maxN+slack)
	rng := rand.New(rand.NewPCG(7, 11))
	start := time.Now()
	none := os.Getenv("GOSHMEM_TEST_SHARECOPY") == "none" // sharing is off: 40 iterations
	for i := 1; ; i++ {
		caller := rng.IntN(2)
		put := rng.IntN(2) == 0
		fromPrivate := rng.IntN(4) == 0
		n := min(int(float64(64<<10)*math.Exp2(rng.Float64()*6.4)), maxN) // 64 KiB * 2^[0, 6.4)
		so, do := rng.IntN(slack), rng.IntN(slack)
		// The source lives on the caller for a put, on the other PE
		// for a get; the destination the other way round.
		srcOwner, dstOwner := caller, 1-caller
		if !put {
			srcOwner, dstOwner = 1-caller, caller
		}
		s := src
		if fromPrivate && me == caller {
			s = private // a put's source or a get's destination is local
		}
		if me == srcOwner {
			b := src
			if fromPrivate && put {
				b = private
			}
			for k := range n {
				b[so+k] = shareByte(i, k)
			}
		}
		if me == dstOwner {
			b := dst
			if fromPrivate && !put {
				b = private
			}
			for k := range b {
				b[k] = 0xEE
			}
		}
		pe.BarrierAll()
		if me == caller {
			if put {
				goshmem.Put(c, dst[do:do+n], s[so:so+n], other)
			} else {
				d := dst
				if fromPrivate {
					d = private
				}
				goshmem.Get(c, d[do:do+n], src[so:so+n], other)
			}
			c.Fence()
			goshmem.P(c, &flag[0], int64(i), other)
		} else {
			goshmem.WaitUntil(pe, &flag[0], goshmem.CmpEQ, int64(i))
		}
		if me == dstOwner {
			b := dst
			if fromPrivate && !put {
				b = private
			}
			for k, v := range b {
				want := byte(0xEE)
				if k >= do && k < do+n {
					want = shareByte(i, k-do)
				}
				if v != want {
					fail(pe, "iteration %d (caller PE %d, put %v, private %v, %d bytes, src+%d, dst+%d): dst byte %d is %#x, want %#x",
						i, caller, put, fromPrivate, n, so, do, k, v, want)
				}
			}
		}
		goshmem.AtomicAdd(c, &stolen[0], int64(pe.TasksStolen()), 0)
		pe.BarrierAll()
		total := goshmem.G(c, &stolen[0], 0)
		pe.BarrierAll()
		if me == 0 {
			stolen[0] = 0
		}
		pe.BarrierAll()
		if i >= 40 && (total > 0 || none || time.Since(start) > 20*time.Second) {
			break
		}
	}
	fmt.Printf("PE %d ok sharecopy stole %d\n", me, pe.TasksStolen())
}

func TestMultiProcessShareCopy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ppp   int
		env   []string
		share bool
	}{
		{"2x1", 1, nil, true},
		{"2-goroutines", 2, nil, true},
		{"2x1-off", 1, []string{"SHMEM_COPY_SHARE=off", "GOSHMEM_TEST_SHARECOPY=none"}, false},
		{"2x1-nosteal", 1, []string{"SHMEM_TASK_STEAL=off", "GOSHMEM_TEST_SHARECOPY=none"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runJob(t, "sharecopy", 2, tc.ppp, false, append([]string{"SHMEM_SYMMETRIC_SIZE=32m"}, tc.env...)...)
			if r.err != nil || r.code != 0 {
				t.Fatalf("code %d err %v\nstdout:\n%s\nstderr:\n%s", r.code, r.err, r.stdout, r.stderr)
			}
			stole := 0
			for pe := range 2 {
				i := strings.Index(r.stdout, fmt.Sprintf("PE %d ok sharecopy stole ", pe))
				if i < 0 {
					t.Fatalf("PE %d did not finish:\n%s", pe, r.stdout)
				}
				f := strings.Fields(r.stdout[i:])
				k, _ := strconv.Atoi(f[5])
				stole += k
			}
			if tc.share && stole == 0 {
				t.Errorf("no chunk of any copy was run by the waiting PE:\n%s", r.stdout)
			}
			if !tc.share && stole != 0 {
				t.Errorf("%d chunks were run by the waiting PE with %v:\n%s", stole, tc.env, r.stdout)
			}
		})
	}
}
