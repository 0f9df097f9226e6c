package tcp

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internode"
	"github.com/goshmem/goshmem/internode/internodetest"
)

// sink records what a leader receives. Payloads are checked against the
// reference generator on arrival (not kept); headers are kept in order.
type sink struct {
	mu      sync.Mutex
	frames  map[int][]internode.Header
	bad     []string
	failed  chan string
	nfailed atomic.Int64
	check   bool
	to      int
	// gate, when set, holds the receiver of a payload of gateLen bytes
	// in Buffer until it is closed (the sender's write stays in flight).
	gate    chan struct{}
	gateLen uint32
}

func newSink(to int) *sink {
	return &sink{frames: map[int][]internode.Header{}, failed: make(chan string, 64), check: true, to: to}
}

func (s *sink) Buffer(from int, h *internode.Header) []byte {
	if s.gate != nil && h.Len == s.gateLen {
		<-s.gate
	}
	return make([]byte, h.Len)
}

func (s *sink) Deliver(from int, h *internode.Header, buf []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frames[from] = append(s.frames[from], *h)
	if s.check && !equalPayload(buf, from, s.to, h.Seq, h.Len) {
		s.bad = append(s.bad, fmt.Sprintf("frame %d from %d at %d: %d-byte payload differs", h.Seq, from, s.to, len(buf)))
	}
}

func (s *sink) Failed(peer int, err error) {
	s.nfailed.Add(1)
	s.failed <- fmt.Sprintf("leader %d: %v", peer, err)
}

func (s *sink) count(from int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.frames[from])
}

// fill writes the reference payload of frame k from -> to into b.
func fill(b []byte, from, to int, k uint32) {
	r := rand.New(rand.NewPCG(uint64(from<<20|to), uint64(k)))
	for i := 0; i < len(b); i += 8 {
		v := r.Uint64()
		for j := i; j < i+8 && j < len(b); j++ {
			b[j] = byte(v)
			v >>= 8
		}
	}
}

func equalPayload(b []byte, from, to int, k, n uint32) bool {
	if len(b) != int(n) {
		return false
	}
	want := make([]byte, n)
	fill(want, from, to, k)
	return string(want) == string(b)
}

// leaders is a test's set of transports on loopback.
type leaders struct {
	ts    []*Transport
	x     *internodetest.Exchange
	sinks []internode.Sink
}

// start opens n transports on loopback through internode.Open; mod may
// change each leader's Config.
func start(t testing.TB, n int, mod func(i int, c *internode.Config), sinks []internode.Sink) *leaders {
	t.Helper()
	l := &leaders{ts: make([]*Transport, n), x: internodetest.NewExchange(0), sinks: sinks}
	for i := range n {
		cfg := internode.Config{Index: i, Leaders: n, JobID: "job-1", Sink: sinks[i], Exchange: l.x.View(i), Iface: "127.0.0.1"}
		if mod != nil {
			mod(i, &cfg)
		}
		tr, err := internode.Open([]internode.Backend{Backend()}, "tcp", cfg)
		if err != nil {
			t.Fatal(err)
		}
		l.ts[i] = tr.(*Transport)
	}
	t.Cleanup(func() {
		for _, tr := range l.ts {
			tr.Close()
		}
	})
	return l
}

func sinks(n int) ([]*sink, []internode.Sink) {
	s := make([]*sink, n)
	is := make([]internode.Sink, n)
	for i := range s {
		s[i] = newSink(i)
		is[i] = s[i]
	}
	return s, is
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// kill ends t's connections as a crashed process would: every socket
// closes, no goodbye is written. (The test's Cleanup then closes t.)
func kill(t *Transport) {
	t.ln.Close()
	t.mu.Lock()
	for c := range t.hs {
		c.Close()
	}
	t.mu.Unlock()
	for _, p := range t.out {
		p.mu.Lock()
		x := p.x
		p.mu.Unlock()
		if x != nil {
			x.shut(errors.New("killed"))
		}
	}
}

// countWrites counts t's write system calls; call it before t's first
// Send.
func countWrites(t *Transport) *atomic.Int64 {
	var n atomic.Int64
	t.writes = func() { n.Add(1) }
	return &n
}

var _ net.Conn // (net is used by the benchmarks)
