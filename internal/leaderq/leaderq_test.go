package leaderq

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internal/wait"
	"github.com/goshmem/goshmem/shm"
)

const producerVar = "GOSHMEM_LEADERQ_PRODUCER" // "id,count": the test binary is a producer process

func TestMain(m *testing.M) {
	if v := os.Getenv(producerVar); v != "" {
		os.Exit(producer(v))
	}
	os.Exit(m.Run())
}

// producer maps the queue inherited as fd 3 and pushes count messages
// (id, k), retrying while the queue is full.
func producer(v string) int {
	id, count := 0, 0
	fmt.Sscanf(v, "%d,%d", &id, &count)
	seg, err := shm.FromFD(3, "queue")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	m, err := seg.Map(0, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	q, err := Open(m.Bytes())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for k := range count {
		for !q.TryPush(msg(id, k)) {
			time.Sleep(10 * time.Microsecond)
		}
	}
	return 0
}

// msg is message k of producer id: its ids, then k%40 filler bytes, so
// that lengths vary.
func msg(id, k int) []byte {
	b := make([]byte, 8+k%40)
	binary.LittleEndian.PutUint32(b, uint32(id))
	binary.LittleEndian.PutUint32(b[4:], uint32(k))
	for i := 8; i < len(b); i++ {
		b[i] = byte(id + k + i)
	}
	return b
}

// checker is the reference: every producer's messages arrive complete,
// unchanged and in the order pushed.
type checker struct {
	t    testing.TB
	next map[int]int
}

func (c *checker) check(b []byte) {
	c.t.Helper()
	id, k := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:]))
	if k != c.next[id] {
		c.t.Fatalf("producer %d: message %d arrived, want %d", id, k, c.next[id])
	}
	if want := msg(id, k); string(b) != string(want) {
		c.t.Fatalf("producer %d message %d: %x, want %x", id, k, b, want)
	}
	c.next[id]++
}

func newQueue(t testing.TB, slots, max int) (*Queue, []byte) {
	region := make([]byte, Size(slots, max))
	q, err := Init(region, slots, max)
	if err != nil {
		t.Fatal(err)
	}
	return q, region
}

func TestInitErrors(t *testing.T) {
	for _, c := range []struct{ slots, max, region int }{{3, 8, 4096}, {1, 8, 4096}, {4, 0, 4096}, {64, 64, 100}} {
		if _, err := Init(make([]byte, c.region), c.slots, c.max); err == nil {
			t.Errorf("Init(%d slots, %d bytes, %d-byte region) succeeded", c.slots, c.max, c.region)
		}
	}
	if _, err := Open(make([]byte, 4096)); err == nil {
		t.Error("Open of a zeroed region succeeded")
	}
}

// TestFIFOAndFull: one producer fills the ring, which then refuses, and
// the consumer empties it in order, over several laps.
func TestFIFOAndFull(t *testing.T) {
	q, region := newQueue(t, 8, 48)
	q2, err := Open(region)
	if err != nil {
		t.Fatal(err)
	}
	c := &checker{t: t, next: map[int]int{}}
	buf := make([]byte, q.Max())
	k := 0
	for lap := range 5 {
		for i := range 8 {
			if !q2.TryPush(msg(1, k+i)) {
				t.Fatalf("lap %d: push %d refused with %d slots", lap, i, 8)
			}
		}
		if q2.TryPush(msg(1, 99)) {
			t.Fatalf("lap %d: a ninth push into 8 slots succeeded", lap)
		}
		for range 8 {
			n, ok := q.TryPop(buf)
			if !ok {
				t.Fatal("a pop from a full queue found nothing")
			}
			c.check(buf[:n])
		}
		if _, ok := q.TryPop(buf); ok {
			t.Fatal("a pop from an empty queue found something")
		}
		k += 8
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "leaderq") {
			t.Errorf("an oversized push: panic %v", p)
		}
	}()
	q.TryPush(make([]byte, q.Max()+1))
}

// TestProducersGoroutines: many producers at once against one
// consumer, checked against the reference (run it under -race).
func TestProducersGoroutines(t *testing.T) {
	const producers, each = 8, 5000
	q, _ := newQueue(t, 64, 48)
	var wg sync.WaitGroup
	for id := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				for !q.TryPush(msg(id, k)) {
					time.Sleep(time.Microsecond)
				}
			}
		}()
	}
	c := &checker{t: t, next: map[int]int{}}
	buf := make([]byte, q.Max())
	p := wait.Policy{Spin: 100, Yield: 10, MaxSleep: time.Second}
	for range producers * each {
		n, ok := pop(q, buf, &p, func() bool { return false })
		if !ok {
			t.Fatal("Pop gave up")
		}
		c.check(buf[:n])
	}
	wg.Wait()
}

// TestSleepingConsumerWoken: a consumer that sleeps on the doorbell is
// woken by the push, not by its timeout.
func TestSleepingConsumerWoken(t *testing.T) {
	q, _ := newQueue(t, 4, 16)
	p := wait.Policy{Spin: 1, Yield: 1, MinSleep: 5 * time.Second, MaxSleep: 5 * time.Second}
	got := make(chan time.Time)
	go func() {
		buf := make([]byte, q.Max())
		pop(q, buf, &p, func() bool { return false })
		got <- time.Now()
	}()
	time.Sleep(50 * time.Millisecond) // the consumer is asleep by now
	pushed := time.Now()
	q.TryPush([]byte("x"))
	select {
	case at := <-got:
		if d := at.Sub(pushed); d > time.Second {
			t.Errorf("the consumer woke %v after the push: the ring did not wake it", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the consumer never woke")
	}
}

// TestProducerProcesses: producers in other processes map the queue's
// segment and push; the consumer here sees every message in order.
func TestProducerProcesses(t *testing.T) {
	const producers, each = 3, 3000
	size := Size(32, 48)
	seg, err := shm.Create("leaderq-test", int64(size), shm.Options{})
	if err != nil {
		t.Skipf("no shared segment: %v", err)
	}
	defer seg.Close()
	m, err := seg.Map(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	q, err := Init(m.Bytes(), 32, 48)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	for id := range producers {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), producerVar+"="+strconv.Itoa(id)+","+strconv.Itoa(each))
		cmd.ExtraFiles = []*os.File{seg.File()}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	c := &checker{t: t, next: map[int]int{}}
	buf := make([]byte, q.Max())
	p := wait.Policy{Spin: 1000, Yield: 100, MaxSleep: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for range producers * each {
		n, ok := pop(q, buf, &p, func() bool { return time.Now().After(deadline) })
		if !ok {
			t.Fatalf("timed out with %v received", c.next)
		}
		c.check(buf[:n])
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("producer: %v", err)
		}
	}
}

// BenchmarkPushPop is the queue's own cost: one 32-byte message pushed
// and popped by one goroutine (no sleeper: the push's ring is a load).
func BenchmarkPushPop(b *testing.B) {
	q, _ := newQueue(b, 64, 48)
	m := make([]byte, 32)
	buf := make([]byte, q.Max())
	b.ReportAllocs()
	for range b.N {
		q.TryPush(m)
		q.TryPop(buf)
	}
}

// TestWaitAndReady: Wait returns true once a message is there (an
// asleep waiter is woken by the push, as Pop's is) and takes nothing,
// false when stop turns true; Ready tells without taking.
func TestWaitAndReady(t *testing.T) {
	q, _ := newQueue(t, 4, 16)
	if q.Ready() {
		t.Fatal("Ready on an empty queue")
	}
	p := wait.Policy{Spin: 1, Yield: 1, MinSleep: 5 * time.Second, MaxSleep: 5 * time.Second}
	got := make(chan bool)
	go func() { got <- q.Wait(&p, func() bool { return false }) }()
	time.Sleep(50 * time.Millisecond) // the waiter is asleep by now
	q.TryPush([]byte("x"))
	select {
	case ok := <-got:
		if !ok {
			t.Error("Wait reported no message after a push")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the push did not wake the waiter")
	}
	for range 2 { // Wait and Ready took nothing
		if !q.Ready() {
			t.Fatal("Ready is false with a message queued")
		}
		if !q.Wait(&p, func() bool { return false }) {
			t.Fatal("Wait false with a message queued")
		}
	}
	buf := make([]byte, q.Max())
	if n, ok := q.TryPop(buf); !ok || string(buf[:n]) != "x" {
		t.Fatalf("TryPop = %q, %v after Wait and Ready, want the message", buf[:n], ok)
	}
	var stop atomic.Bool
	go func() { got <- q.Wait(&p, stop.Load) }()
	time.Sleep(20 * time.Millisecond)
	stop.Store(true)
	q.Wake()
	select {
	case ok := <-got:
		if ok {
			t.Error("Wait reported a message on an empty queue")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("stop and Wake did not end the wait")
	}
}

// pop is the consumer's loop the leader's progress goroutine runs:
// wait for a message (Wait), then take it (TryPop).
func pop(q *Queue, buf []byte, p *wait.Policy, stop func() bool) (int, bool) {
	for q.Wait(p, stop) {
		if n, ok := q.TryPop(buf); ok {
			return n, true
		}
	}
	return 0, false
}
