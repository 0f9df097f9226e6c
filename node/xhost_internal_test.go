package node

import (
	"testing"
	"time"
)

// TestTalking checks when a polling wait counts its process as talking
// to other hosts (and reads the sockets at every yield and every 8
// spins): within netActive of a frame sent or delivered, not after.
func TestTalking(t *testing.T) {
	var x xhost
	x.lastNet.Store(time.Now().Add(-2 * netActive).UnixNano())
	if x.talking() {
		t.Error("quiet for 2 x netActive: talking() = true")
	}
	x.lastNet.Store(time.Now().UnixNano())
	if !x.talking() {
		t.Error("a frame just now: talking() = false")
	}
}
