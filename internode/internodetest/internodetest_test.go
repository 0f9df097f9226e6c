package internodetest

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestExchange: keys are put once per rank and read by any rank; a
// fence of parties waits for every rank, and a second fence of a rank
// is refused, as under a launcher.
func TestExchange(t *testing.T) {
	x := NewExchange(2)
	a, b := x.View(0), x.View(1)
	if err := a.Put("k", []byte("v0")); err != nil {
		t.Fatal(err)
	}
	if err := a.Put("k", []byte("again")); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("second Put of a key: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Fence() }()
	select {
	case err := <-done:
		t.Fatalf("Fence of one rank of two returned %v before the other came", err)
	case <-time.After(50 * time.Millisecond):
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); b.Fence() }()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := a.Fence(); err == nil {
		t.Error("a second Fence of rank 0 succeeded")
	}
	if v, err := b.Get(0, "k"); err != nil || string(v) != "v0" {
		t.Errorf("Get(0, k) = %q, %v", v, err)
	}
	if _, err := b.Get(1, "k"); err == nil {
		t.Error("Get of a key rank 1 never put succeeded")
	}
	x.Rewrite = func(int, string, []byte) []byte { return []byte("other") }
	if v, _ := b.Get(0, "k"); string(v) != "other" || x.Gets() != 3 {
		t.Errorf("with Rewrite: %q, %d gets", v, x.Gets())
	}
	if NewExchange(0).View(0).Fence() != nil {
		t.Error("Fence with no parties did not return at once")
	}
}
