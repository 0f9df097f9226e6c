package node

import (
	"testing"
	"time"
)

// TestTalking checks when a polling wait counts its process as talking
// to other hosts (and reads the sockets at every yield and every 8
// spins): at once after a frame sent or delivered, for about netActive
// after the last, not after that, and again at the next frame.
func TestTalking(t *testing.T) {
	var x xhost
	x.netEvent()
	if !x.talking() {
		t.Fatal("a frame just now: talking() = false")
	}
	start := time.Now()
	if !x.talking() {
		t.Fatal("no frame since the last look, well within netActive: talking() = false")
	}
	for x.talking() {
		if time.Since(start) > 100*netActive {
			t.Fatalf("no frame for %v: talking() still true", time.Since(start))
		}
	}
	if d := time.Since(start); d < netActive {
		t.Errorf("talking() turned false %v after the last frame, before netActive (%v)", d, netActive)
	}
	if x.talking() {
		t.Error("quiet: talking() = true at the next look")
	}
	x.netEvent()
	if !x.talking() {
		t.Error("a new frame after a quiet period: talking() = false")
	}
}
