package node

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
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
