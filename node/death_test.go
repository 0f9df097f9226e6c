package node_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
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

func init() {
	for name, wait := range deathWaits {
		scenarios["death-"+name] = func(p *goshmem.PE) { scenarioDeath(p, name, wait) }
	}
}

// scenarioDeath: the last PE takes the lock, lets the others enter the
// wait and reach their longest sleeps, and kills itself; the others
// print when they noticed.
func scenarioDeath(p *goshmem.PE, name string, wait func(p *goshmem.PE, x []int64, sig []uint64)) {
	x, _ := goshmem.Calloc[int64](p, 16)
	sig, _ := goshmem.Calloc[uint64](p, 1)
	last := p.NPEs() - 1
	if p.MyPE() == last {
		p.SetLock(&x[4])
	}
	p.BarrierAll()
	if p.MyPE() == last {
		time.Sleep(400 * time.Millisecond)
		fmt.Fprintf(os.Stderr, "PE %d kills itself at %d\n", last, time.Now().UnixNano())
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	defer func() {
		r := recover()
		if je, ok := r.(*goshmem.JobError); ok && je.Failed == last {
			fmt.Fprintf(os.Stderr, "PE %d noticed in %s at %d\n", p.MyPE(), je.Routine, time.Now().UnixNano())
		}
		panic(r)
	}()
	wait(p, x, sig)
}

// TestDeadPeerNoticedInEveryWait kills one PE of a 4-PE job of
// single-PE processes, without the launcher's supervision, while the
// other three are in each kind of wait, with SHMEM_WAIT_SLEEP=100ms: each
// must stop with a JobError naming the dead PE within SHMEM_WAIT_SLEEP +
// 50 ms of the kill (the bound the README and docs/design.md give), with
// a margin for this machine's scheduling.
func TestDeadPeerNoticedInEveryWait(t *testing.T) {
	const sleep = 100 * time.Millisecond
	const bound = sleep + 50*time.Millisecond
	const margin = 60 * time.Millisecond // process exit, scheduling on a loaded machine
	killRe := regexp.MustCompile(`PE 3 kills itself at (\d+)`)
	noticeRe := regexp.MustCompile(`PE (\d) noticed in (\w+) at (\d+)`)
	for name := range deathWaits {
		t.Run(name, func(t *testing.T) {
			r := runJob(t, "death-"+name, 4, 1, true, "SHMEM_WAIT_SLEEP="+sleep.String())
			if r.code == 0 {
				t.Fatalf("job succeeded; stderr:\n%s", r.stderr)
			}
			m := killRe.FindStringSubmatch(r.stderr)
			if m == nil {
				t.Fatalf("no kill time in stderr:\n%s", r.stderr)
			}
			killed, _ := strconv.ParseInt(m[1], 10, 64)
			seen := map[string]bool{}
			var worst time.Duration
			for _, n := range noticeRe.FindAllStringSubmatch(r.stderr, -1) {
				at, _ := strconv.ParseInt(n[3], 10, 64)
				d := time.Duration(at - killed)
				seen[n[1]] = true
				worst = max(worst, d)
				if d > bound+margin {
					t.Errorf("PE %s noticed the death in %s after %v, want within %v (+%v margin)", n[1], n[2], d, bound, margin)
				}
			}
			if len(seen) != 3 {
				t.Errorf("%d of the 3 surviving PEs noticed the dead PE 3; stderr:\n%s", len(seen), r.stderr)
			}
			t.Logf("slowest survivor noticed %v after the kill", worst)
		})
	}
}
