package node_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goshmem/goshmem"
)

// Noticing a dead peer: every kind of wait must stop within
// SHMEM_WAIT_SLEEP + 50 ms of a peer process's death, without the
// launcher's help (docs/design.md, "Failure").

// deathWaits are the waits of the death scenarios: each PE but the last
// enters it; the last PE dies while they wait.
var deathWaits = map[string]func(p *goshmem.PE, x []int64, sig []uint64){
	"WaitUntil":    func(p *goshmem.PE, x []int64, sig []uint64) { goshmem.WaitUntil(p, &x[0], goshmem.CmpEQ, 1) },
	"WaitUntilAll": func(p *goshmem.PE, x []int64, sig []uint64) { goshmem.WaitUntilAll(p, x[:4], nil, goshmem.CmpEQ, 1) },
	"WaitUntilAny": func(p *goshmem.PE, x []int64, sig []uint64) { goshmem.WaitUntilAny(p, x[:4], nil, goshmem.CmpEQ, 1) },
	"WaitUntilSomeVector": func(p *goshmem.PE, x []int64, sig []uint64) {
		goshmem.WaitUntilSomeVector(p, x[:4], nil, goshmem.CmpEQ, []int64{1, 2, 3, 4}, nil)
	},
	"SignalWaitUntil": func(p *goshmem.PE, x []int64, sig []uint64) {
		goshmem.SignalWaitUntil(p, &sig[0], goshmem.CmpEQ, 1)
	},
	"SetLock":    func(p *goshmem.PE, x []int64, sig []uint64) { p.SetLock(&x[4]) }, // held by the dying PE
	"BarrierAll": func(p *goshmem.PE, x []int64, sig []uint64) { p.BarrierAll() },
	"SumReduce": func(p *goshmem.PE, x []int64, sig []uint64) {
		goshmem.SumReduce(goshmem.TeamWorld(p), x[8:12], x[12:16])
	},
	"Broadcast": func(p *goshmem.PE, x []int64, sig []uint64) {
		goshmem.Broadcast(goshmem.TeamWorld(p), x[8:12], x[12:16], p.NPEs()-1)
	},
}

// amoLockWait: an AMO on PE 0 in cma mode, whose lock the dying PE holds.
func amoLockWait(p *goshmem.PE, x []int64, sig []uint64) {
	goshmem.AtomicFetchAdd(p.Ctx(), &x[5], 1, 0)
}

func init() {
	for name, wait := range deathWaits {
		scenarios["death-"+name] = func(p *goshmem.PE) { scenarioDeath(p, name, wait) }
	}
	scenarios["death-AMOLock"] = func(p *goshmem.PE) { scenarioDeath(p, "AMOLock", amoLockWait) }
}

// dieVar lists the PEs that die in a death scenario (default: the last).
const dieVar = "GOSHMEM_TEST_DIE"

// dying returns the PEs that die in a death scenario.
func dying(p *goshmem.PE) map[int]bool {
	d := map[int]bool{}
	for _, f := range strings.Split(os.Getenv(dieVar), ",") {
		if n, err := strconv.Atoi(f); err == nil {
			d[n] = true
		}
	}
	if len(d) == 0 {
		d[p.NPEs()-1] = true
	}
	return d
}

// scenarioDeath: the first dying PE takes the lock (SetLock's, or PE
// 0's AMO lock in the AMOLock scenario), the others enter the wait and
// reach their longest sleeps, and the dying PEs kill their processes at
// the same moment; the others print when they noticed.
func scenarioDeath(p *goshmem.PE, name string, wait func(p *goshmem.PE, x []int64, sig []uint64)) {
	x, _ := goshmem.Calloc[int64](p, 16)
	sig, _ := goshmem.Calloc[uint64](p, 1)
	die := dying(p)
	first := p.NPEs()
	for pe := range die {
		first = min(first, pe)
	}
	if p.MyPE() == first {
		if name == "AMOLock" {
			p.TakeAMOLock(0)
		} else {
			p.SetLock(&x[4])
		}
	}
	p.BarrierAll()
	if die[p.MyPE()] {
		time.Sleep(400 * time.Millisecond)
		fmt.Fprintf(os.Stderr, "PE %d kills itself at %d\n", p.MyPE(), time.Now().UnixNano())
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	defer func() {
		r := recover()
		// The failed PE named is the first unfinalized PE of a dead
		// process: any PE of a dying PE's process.
		ppp, _ := strconv.Atoi(os.Getenv("GOSHMEM_LOCAL_PES"))
		ppp = max(ppp, 1)
		if je, ok := r.(*goshmem.JobError); ok && (die[je.Failed] || die[je.Failed/ppp*ppp+ppp-1] || die[je.Failed/ppp*ppp]) {
			fmt.Fprintf(os.Stderr, "PE %d noticed in %s at %d\n", p.MyPE(), je.Routine, time.Now().UnixNano())
		}
		panic(r)
	}()
	wait(p, x, sig)
}

// deathBound is how soon after a peer process's death every waiting PE
// must have stopped: the kernel reporting the exit to the ring watcher's
// pidfd, the doorbell ring, the waiter's wake-up, on a loaded 2-core
// machine. It is independent of SHMEM_WAIT_SLEEP, which the tests set to
// its maximum, 500 ms (the old polling design needed up to SHMEM_WAIT_SLEEP + 50 ms).
const deathBound = 100 * time.Millisecond

// checkDeath runs a death scenario with npes PEs, ppp per process,
// without the launcher's supervision, and checks that every PE outside
// the dying PEs' processes noticed within deathBound of the first kill.
func checkDeath(t *testing.T, scenario string, npes, ppp int, die []int, env ...string) {
	t.Helper()
	killRe := regexp.MustCompile(`PE (\d+) kills itself at (\d+)`)
	noticeRe := regexp.MustCompile(`PE (\d+) noticed in (\w+) at (\d+)`)
	env = append(env, "SHMEM_WAIT_SLEEP=500ms")
	if die != nil {
		s := make([]string, len(die))
		for i, d := range die {
			s[i] = strconv.Itoa(d)
		}
		env = append(env, dieVar+"="+strings.Join(s, ","))
	} else {
		die = []int{npes - 1}
	}
	dead := map[int]bool{}
	for _, d := range die {
		for pe := d / ppp * ppp; pe < min(npes, (d/ppp+1)*ppp); pe++ {
			dead[pe] = true // the whole process dies
		}
	}
	r := runJob(t, scenario, npes, ppp, true, env...)
	if r.code == 0 {
		t.Fatalf("job succeeded; stderr:\n%s", r.stderr)
	}
	var killed int64
	for _, m := range killRe.FindAllStringSubmatch(r.stderr, -1) {
		at, _ := strconv.ParseInt(m[2], 10, 64)
		if killed == 0 || at < killed {
			killed = at
		}
	}
	if killed == 0 {
		t.Fatalf("no kill time in stderr (code %d, err %v):\n%s", r.code, r.err, r.stderr)
	}
	seen := map[string]bool{}
	var worst time.Duration
	for _, n := range noticeRe.FindAllStringSubmatch(r.stderr, -1) {
		at, _ := strconv.ParseInt(n[3], 10, 64)
		d := time.Duration(at - killed)
		seen[n[1]] = true
		worst = max(worst, d)
		if d > deathBound {
			t.Errorf("PE %s noticed the death in %s after %v, want within %v", n[1], n[2], d, deathBound)
		}
	}
	if want := npes - len(dead); len(seen) != want {
		t.Errorf("%d of the %d surviving PEs noticed the death; stderr:\n%s", len(seen), want, r.stderr)
	}
	t.Logf("slowest survivor noticed %v after the kill", worst)
}

// TestDeadPeerNoticedInEveryWait kills one PE of a 4-PE job of
// single-PE processes, without the launcher's supervision, while the
// other three are in each kind of wait, with SHMEM_WAIT_SLEEP=500ms: each
// must stop with a JobError naming the dead PE within deathBound of the
// kill (README and docs/design.md, "Failure").
func TestDeadPeerNoticedInEveryWait(t *testing.T) {
	for name := range deathWaits {
		t.Run(name, func(t *testing.T) { checkDeath(t, "death-"+name, 4, 1, nil) })
	}
}

// TestDeadPeerNoticedRing: the deaths the ring of watchers must see -
// a process hosting two PEs (both gone at once), two adjacent processes
// of the ring dying together (one of them the other's watcher), the
// first process of the ring - and the lock of emulated AMOs (cma mode)
// held by the PE that dies.
func TestDeadPeerNoticedRing(t *testing.T) {
	for _, tc := range []struct {
		name      string
		scenario  string
		npes, ppp int
		die       []int
		env       []string
	}{
		{"2-PE-process-BarrierAll", "death-BarrierAll", 4, 2, nil, nil},
		{"2-PE-process-WaitUntil", "death-WaitUntil", 6, 2, []int{2}, nil},
		{"adjacent-processes", "death-BarrierAll", 5, 1, []int{1, 2}, nil},
		{"first-process", "death-SumReduce", 4, 1, []int{0}, nil},
		{"AMOLock-cma", "death-AMOLock", 4, 1, nil, []string{"SHMEM_TRANSPORT=cma"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkDeath(t, tc.scenario, tc.npes, tc.ppp, tc.die, tc.env...) })
	}
}

// pidfdCount counts this process's descriptors that are pidfds.
func pidfdCount() (int, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == "anon_inode:[pidfd]" {
			n++
		}
	}
	return n, nil
}

func init() {
	scenarios["pidfds"] = func(p *goshmem.PE) {
		p.BarrierAll()
		n, err := pidfdCount()
		if err != nil {
			fmt.Printf("PE %d: %v\n", p.MyPE(), err)
		}
		fmt.Printf("PE %d pidfds %d\n", p.MyPE(), n)
		p.BarrierAll()
	}
}

// TestPidfdsPerProcess: a PE process holds O(1) pidfds whatever the
// number of PEs (the ring watcher's one), at 4 and 32 PEs.
func TestPidfdsPerProcess(t *testing.T) {
	if _, err := pidfdCount(); err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	re := regexp.MustCompile(`PE (\d+) pidfds (\d+)`)
	for _, npes := range []int{4, 32} {
		r := runJob(t, "pidfds", npes, 1, false)
		if r.code != 0 {
			t.Fatalf("%d PEs: code %d; stderr:\n%s", npes, r.code, r.stderr)
		}
		m := re.FindAllStringSubmatch(r.stdout, -1)
		if len(m) != npes {
			t.Fatalf("%d PEs: %d reported; stdout:\n%s", npes, len(m), r.stdout)
		}
		for _, x := range m {
			if n, _ := strconv.Atoi(x[2]); n > 1 {
				t.Errorf("%d PEs: PE %s holds %d pidfds, want at most 1", npes, x[1], n)
			}
		}
	}
}
