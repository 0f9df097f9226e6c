//go:build verbs && cgo && linux

package verbs

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// TestRCPingPong times this package's own posts and reaps the way
// perftest's ib_write_lat times the device: two queue pairs of one
// process, two threads, an 8-byte RDMA WRITE each way, each side
// polling its memory for the other's counter and reaping its send's
// completion. The one-way time it logs, against ib_write_lat's on the
// same device (guest.sh's lat step), separates what Go and cgo cost
// per message from what goshmem's transport adds above them. It fails
// if a counter arrives wrong or the ping-pong stalls.
func TestRCPingPong(t *testing.T) {
	d := openOrSkip(t)
	bufs := [2][]byte{mapped(t, 4096), mapped(t, 4096)}
	qs, cqs, mrs := rcPair(t, d, bufs)
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs 2 threads running at once")
	}
	var wg sync.WaitGroup
	errs := make([]string, 2)
	var elapsed time.Duration
	wg.Add(2)
	for me := range 2 {
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			d, err := pingPong(me, qs[me], cqs[me], mrs[me], bufs[me], uint64(mrs[1-me].Addr), mrs[1-me].RKey)
			if err != nil {
				errs[me] = err.Error()
			}
			if me == 0 {
				elapsed = d
			}
		}()
	}
	wg.Wait()
	for i, e := range errs {
		if e != "" {
			t.Fatalf("side %d: %s", i, e)
		}
	}
	t.Logf("RC ping-pong, 8-byte RDMA WRITE each way, polled in memory: %.2f us one way (%d round trips)",
		float64(elapsed.Nanoseconds())/1e3/(2*pingRounds), pingRounds)
}

// pingRounds is how many round trips pingPong makes.
const pingRounds = 2000

// pingPong is one side of TestRCPingPong's loop on queue pair q (its
// completions on cq, buf registered as m): side 0 writes counter v
// into the other side's buffer at raddr+64 (rkey), then polls its own
// buf[64:72] until the other side has written v back; side 1 answers.
// It returns side 0's time for the round trips.
func pingPong(me int, q *RC, cq *CQ, m *MR, buf []byte, raddr uint64, rkey uint32) (time.Duration, error) {
	const out, in = 0, 64 // this side's counter (the WRITE's source); where the other's lands
	var wc [16]Completion
	word := (*atomic.Uint64)(unsafe.Pointer(&buf[in]))
	deadline := time.Now().Add(60 * time.Second)
	send := func(v uint64) error {
		binary.LittleEndian.PutUint64(buf[out:], v)
		if err := q.PostWrite(v, m, buf[out:out+8], raddr+in, rkey); err != nil {
			return err
		}
		for {
			n, err := cq.Poll(wc[:])
			if err != nil {
				return err
			}
			if n > 0 && wc[0].Status != 0 {
				return fmt.Errorf("send completion: status %d %s", wc[0].Status, wc[0].Err)
			}
			if n > 0 {
				return nil
			}
		}
	}
	recv := func(v uint64) error {
		for n := 0; ; n++ {
			switch got := word.Load(); {
			case got == v:
				return nil
			case got > v:
				return fmt.Errorf("counter %d ran ahead of %d", got, v)
			}
			if n&1023 == 0 && time.Now().After(deadline) {
				return fmt.Errorf("stalled at round trip %d", v)
			}
		}
	}
	start := time.Now()
	for v := uint64(1); v <= pingRounds; v++ {
		if me == 0 {
			if err := send(v); err != nil {
				return 0, err
			}
		}
		if err := recv(v); err != nil {
			return 0, err
		}
		if me == 1 {
			if err := send(v); err != nil {
				return 0, err
			}
		}
	}
	return time.Since(start), nil
}

// pingChildEnv makes the test binary TestRCPingPongProcesses's side 1.
const pingChildEnv = "GOSHMEM_VERBS_PING_CHILD"

// TestRCPingPongProcesses is TestRCPingPong with its two sides in two
// processes, as perftest's client and server and goshmem's leaders
// are: against TestRCPingPong in the same boot it shows what a second
// process (a second Go runtime, two address spaces) costs per message
// on this device.
func TestRCPingPongProcesses(t *testing.T) {
	child := os.Getenv(pingChildEnv) != ""
	d := openOrSkip(t)
	cq, err := d.NewCQ(64)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	q, err := d.NewRC(cq, cq, 32)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	buf := mapped(t, 4096)
	m, err := d.Register(buf, LocalWrite|RemoteWrite|RemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	me := fmt.Sprintf("%s %x %x", q.Endpoint(), m.Addr, m.RKey)
	connect := func(line string) (uint64, uint32) {
		var epS string
		var addr uint64
		var rkey uint32
		if _, err := fmt.Sscanf(line, "%s %x %x", &epS, &addr, &rkey); err != nil {
			t.Fatalf("peer's line %q: %v", line, err)
		}
		ep, err := ParseEndpoint(epS)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Connect(ep); err != nil {
			t.Fatal(err)
		}
		return addr, rkey
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if child {
		in := bufio.NewScanner(os.Stdin)
		if !in.Scan() {
			t.Fatal("no line from the parent")
		}
		addr, rkey := connect(in.Text())
		fmt.Printf("peer %s\n", me)
		if !in.Scan() || in.Text() != "go" {
			t.Fatal("the parent did not say go")
		}
		if _, err := pingPong(1, q, cq, m, buf, addr, rkey); err != nil {
			t.Fatal(err)
		}
		return
	}
	cmd, stdin, stdout := startChild(t, "TestRCPingPongProcesses", pingChildEnv)
	defer cmd.Process.Kill()
	fmt.Fprintln(stdin, me)
	sc := bufio.NewScanner(stdout)
	var addr uint64
	var rkey uint32
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "peer "); ok {
			addr, rkey = connect(line)
			break
		}
	}
	if rkey == 0 && addr == 0 {
		t.Fatal("the child sent no endpoint")
	}
	fmt.Fprintln(stdin, "go")
	elapsed, err := pingPong(0, q, cq, m, buf, addr, rkey)
	if err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	t.Logf("RC ping-pong across 2 processes, 8-byte RDMA WRITE each way, polled in memory: %.2f us one way (%d round trips)",
		float64(elapsed.Nanoseconds())/1e3/(2*pingRounds), pingRounds)
}
