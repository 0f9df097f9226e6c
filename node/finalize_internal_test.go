package node

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internal/job"
)

// TestShareableRecords: Finalize destroys the shareable contexts the
// program left (OpenSHMEM 1.5), but its record of them must not keep a
// context alive: a program that drops contexts without Destroy, as Go
// programs drop values, gets them collected as before Finalize kept a
// record, and the records go with them.
func TestShareableRecords(t *testing.T) {
	err := RunLocal(Config{HeapSize: 1 << 20}, 1, func(p *PE) {
		kept, err := p.CtxCreate(0)
		if err != nil {
			t.Fatal(err)
		}
		private, err := p.CtxCreate(CtxPrivate)
		if err != nil {
			t.Fatal(err)
		}
		for range 1000 {
			if _, err := p.CtxCreate(CtxSerialized); err != nil {
				t.Fatal(err)
			}
		}
		destroyed, _ := p.CtxCreate(0)
		destroyed.Destroy()
		deadline := time.Now().Add(10 * time.Second)
		for p.Shareable() > 1 && time.Now().Before(deadline) {
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
		if n := p.Shareable(); n != 1 {
			t.Errorf("records of shareable contexts after GC: %d, want 1 (the one still referenced)", n)
		}
		p.Finalize()
		if msg := panicText(func() { kept.Quiet() }); !strings.Contains(msg, "destroyed") {
			t.Errorf("Quiet on a shareable context after Finalize: panic %q, want one saying it was destroyed", msg)
		}
		if msg := panicText(func() { private.Quiet() }); msg != "" {
			t.Errorf("Quiet on a private context after Finalize: panic %q, want none", msg)
		}
		private.Destroy()
	})
	if err != nil {
		t.Fatal(err)
	}
}

func panicText(fn func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	fn()
	return ""
}

// TestLeaderCloseNoticesDeadMate: a leader's Finalize waits for its
// host-mates to finalize (xhost.close); a mate whose process is gone
// before it did must end that wait with a *JobError naming it, even
// when no ring watcher records the death (here none runs: an
// in-process job whose PE 1 has the pid of an exited process). Before
// close checked its mates' processes, it waited forever.
func TestLeaderCloseNoticesDeadMate(t *testing.T) {
	j, err := localJob(Config{HeapSize: 1 << 20}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("no process to take the pid of:", err)
	}
	j.ctl.Slot(1).Pid.Store(int32(gone.Process.Pid)) // exited and reaped
	p := newPE(j, 0)
	p.slot.State.Store(job.StateFinalized) // as Finalize does before close
	x := &xhost{j: j, leader: true, local: []int{0, 1}}
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		x.close(p)
	}()
	select {
	case r := <-done:
		je, ok := r.(*JobError)
		if !ok {
			t.Fatalf("close returned with %v, want a *JobError panic", r)
		}
		if je.Failed != 1 || je.Kind != job.AbortLost || je.Routine != "Finalize" {
			t.Errorf("close's JobError %+v, want Finalize stopped by PE 1 lost", je)
		}
		t.Log(je)
	case <-time.After(5 * time.Second):
		t.Fatal("the leader's close still waits 5 s after its host-mate PE 1 died")
	}
}
