package node

import (
	"testing"
	"time"
)

// TestPollNet checks when a polling wait reads the sockets: at every
// pass while the process talks to other hosts (a frame sent or
// delivered within netActive), and only at every netIdleEvery-th pass
// after a quiet netActive.
func TestPollNet(t *testing.T) {
	var x xhost
	x.lastNet.Store(time.Now().Add(-2 * netActive).UnixNano())
	for n := 1; n <= 3*netIdleEvery; n++ {
		if got, want := x.pollNet(n), n%netIdleEvery == 0; got != want {
			t.Errorf("quiet for 2 x netActive, pass %d: pollNet = %v, want %v", n, got, want)
		}
	}
	x.lastNet.Store(time.Now().UnixNano())
	for n := 1; n <= 3*netIdleEvery; n++ {
		if !x.pollNet(n) {
			t.Errorf("a frame just now, pass %d: pollNet = false, want true", n)
		}
	}
}
