//go:build verbs && cgo && linux

package verbs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openOrSkip opens the device of the environment's configuration, or
// skips the test when the machine has none (naming what was looked
// for).
func openOrSkip(t *testing.T) *Device {
	t.Helper()
	c, err := ConfigFromEnv(nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(c)
	if errors.Is(err, ErrNoDevice) {
		t.Skipf("no RDMA device on this machine: %v (internode/verbs/testdata/guest.sh runs these tests on soft-RoCE in a qemu guest)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// mapped returns n bytes of anonymous mapped memory (registered memory
// is never Go-allocated).
func mapped(t *testing.T, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

// waitFor polls cq until it reaps the completion with id, and fails on
// a completion in error or after 10 s.
func waitFor(t *testing.T, cq *CQ, id uint64, op Opcode) Completion {
	t.Helper()
	var wc [16]Completion
	end := time.Now().Add(10 * time.Second)
	for time.Now().Before(end) {
		n, err := cq.Poll(wc[:])
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range wc[:n] {
			if c.Status != 0 {
				t.Fatalf("completion %d (%v): status %d %s", c.ID, c.Op, c.Status, c.Err)
			}
			if c.ID == id {
				if c.Op != op {
					t.Fatalf("completion %d: %v, want %v", id, c.Op, op)
				}
				return c
			}
		}
	}
	t.Fatalf("no completion %d (%v) in 10 s", id, op)
	return Completion{}
}

// TestRCLoopback connects two RC queue pairs of one device to each
// other and moves data with RDMA WRITE, RDMA READ and SEND/RECV, as two
// leaders do: the target's CPU takes no part in a WRITE or a READ.
func TestRCLoopback(t *testing.T) {
	d := openOrSkip(t)
	t.Logf("device %s port %d link %s lid %d gid %x mtu %d", d.Name, d.Port, map[bool]string{true: "Ethernet (RoCE)", false: "InfiniBand"}[d.LinkETH], d.LID, d.GID, d.MTU)
	bufs := [2][]byte{mapped(t, 1<<20), mapped(t, 1<<20)}
	qs, cqs, mrs := rcPair(t, d, bufs)
	a, b := bufs[0], bufs[1]

	// WRITE 256 KiB from a into b at an offset.
	for i := range 256 << 10 {
		a[i] = byte(i*7 + 3)
	}
	if err := qs[0].PostWrite(1, mrs[0], a[:256<<10], uint64(mrs[1].Addr)+4096, mrs[1].RKey); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cqs[0], 1, OpWrite)
	if !bytes.Equal(b[4096:4096+256<<10], a[:256<<10]) {
		t.Fatal("RDMA WRITE: the target's buffer does not hold the data")
	}

	// READ 100 bytes of b back into a's upper half.
	copy(b[900<<10:], "read me back: the target's memory, fetched without its CPU")
	if err := qs[0].PostRead(2, mrs[0], a[512<<10:512<<10+100], uint64(mrs[1].Addr)+900<<10, mrs[1].RKey); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cqs[0], 2, OpRead)
	if !bytes.Equal(a[512<<10:512<<10+100], b[900<<10:900<<10+100]) {
		t.Fatalf("RDMA READ: got %q", a[512<<10:512<<10+60])
	}

	// SEND a small message into a posted receive.
	if err := qs[1].PostRecv(3, mrs[1], b[:64]); err != nil {
		t.Fatal(err)
	}
	msg := []byte("a frame for the target's leader")
	copy(a[1<<10:], msg)
	if err := qs[0].PostSend(4, mrs[0], a[1<<10:1<<10+len(msg)]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cqs[0], 4, OpSend)
	if c := waitFor(t, cqs[1], 3, OpRecv); c.Bytes != len(msg) || !bytes.Equal(b[:len(msg)], msg) {
		t.Fatalf("RECV: %d bytes %q", c.Bytes, b[:len(msg)])
	}

	// Posting and reaping, the hot path of every message, allocate
	// nothing in Go (a Go array passed to C would escape).
	var wc [16]Completion
	if n := testing.AllocsPerRun(100, func() {
		if err := qs[0].PostWrite(6, mrs[0], a[:64], uint64(mrs[1].Addr), mrs[1].RKey); err != nil {
			t.Fatal(err)
		}
		for k := 0; k == 0; {
			var err error
			if k, err = cqs[0].Poll(wc[:]); err != nil {
				t.Fatal(err)
			}
		}
	}); n != 0 {
		t.Errorf("a post and its reap allocate %.1f times", n)
	}

	// A buffer outside the registration is refused before the NIC sees it.
	outside := mapped(t, 4096)
	if err := qs[0].PostWrite(5, mrs[0], outside, uint64(mrs[1].Addr), mrs[1].RKey); err == nil {
		t.Fatal("PostWrite of an unregistered buffer: no error")
	}
}

// rcPair makes two RC queue pairs of one process, each with its own
// CQ and with bufs[i] registered for it, connected to each other;
// everything is closed when the test ends.
func rcPair(t *testing.T, d *Device, bufs [2][]byte) (qs [2]*RC, cqs [2]*CQ, mrs [2]*MR) {
	t.Helper()
	for i := range qs {
		cq, q := newRCDepth(t, d, 64, 32)
		m, err := d.Register(bufs[i], LocalWrite|RemoteWrite|RemoteRead)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		qs[i], cqs[i], mrs[i] = q, cq, m
	}
	for i := range qs {
		if err := qs[i].Connect(qs[1-i].Endpoint()); err != nil {
			t.Fatal(err)
		}
	}
	return qs, cqs, mrs
}

// TestOpenNamedMissing: a device name that does not exist gives the
// no-device error naming it.
func TestOpenNamedMissing(t *testing.T) {
	_, err := Open(Config{Device: "no-such-device0"})
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("err %v; want ErrNoDevice", err)
	}
}

// childEnv makes the test binary the remote side of
// TestRCAcrossProcesses.
const childEnv = "GOSHMEM_VERBS_TEST_CHILD"

// TestRCAcrossProcesses is two leaders' path in two processes: the
// parent registers a memfd mapping (as a leader registers its host's
// heaps), the child connects an RC queue pair to it with the endpoint,
// address and rkey the parent printed (as the wire-up would carry
// them), RDMA WRITEs a pattern into it and READs part of it back. The
// parent checks its memory, which its CPU never touched.
func TestRCAcrossProcesses(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		rcChild(t)
		return
	}
	d := openOrSkip(t)
	fd, err := unix.MemfdCreate("goshmem-verbs-heap", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	const size = 1 << 20
	if err := unix.Ftruncate(fd, size); err != nil {
		t.Fatal(err)
	}
	heap, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(heap)
	copy(heap[8192:], "the parent's own bytes, for the child to read")
	_, q := newRC(t, d)
	m, err := d.Register(heap, LocalWrite|RemoteWrite|RemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	cmd, in, out := startChild(t, "TestRCAcrossProcesses", childEnv)
	defer cmd.Process.Kill()
	fmt.Fprintf(in, "%s %x %x\n", q.Endpoint(), m.Addr, m.RKey)
	sc := bufio.NewScanner(out)
	var lines []string
	var peer Endpoint
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		if s, ok := strings.CutPrefix(line, "endpoint "); ok {
			if peer, err = ParseEndpoint(s); err != nil {
				t.Fatal(err)
			}
			if err := q.Connect(peer); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(in, "connected")
		}
		if line == "done" {
			break
		}
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v; its output:\n%s", err, strings.Join(lines, "\n"))
	}
	if peer.QPN == 0 {
		t.Fatalf("the child sent no endpoint:\n%s", strings.Join(lines, "\n"))
	}
	for i := range 64 << 10 {
		if heap[65536+i] != byte(i*13+5) {
			t.Fatalf("byte %d of the child's RDMA WRITE: %d, want %d", i, heap[65536+i], byte(i*13+5))
		}
	}
	if !slices.Contains(lines, "read: the parent's own bytes, for the child to read") {
		t.Fatalf("the child's RDMA READ did not return the parent's bytes:\n%s", strings.Join(lines, "\n"))
	}
}

// startChild starts this test binary again as the remote side of test
// name (with env=1 in its environment), talking to it through its
// standard input and output.
func startChild(t *testing.T, name, env string) (*exec.Cmd, io.WriteCloser, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v")
	cmd.Env = append(os.Environ(), env+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, in, out
}

// newRC makes a CQ and an RC queue pair on it, closed when the test
// ends.
func newRC(t *testing.T, d *Device) (*CQ, *RC) { return newRCDepth(t, d, 16, 8) }

// newRCDepth is newRC with a CQ of cqDepth entries and a queue pair of
// qpDepth work requests.
func newRCDepth(t *testing.T, d *Device, cqDepth, qpDepth int) (*CQ, *RC) {
	t.Helper()
	cq, err := d.NewCQ(cqDepth)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cq.Close() })
	q, err := d.NewRC(cq, cq, qpDepth)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return cq, q
}

// rcChild is TestRCAcrossProcesses's remote side.
func rcChild(t *testing.T) {
	d := openOrSkip(t)
	var epS string
	var addr uint64
	var rkey uint32
	if _, err := fmt.Fscanf(os.Stdin, "%s %x %x\n", &epS, &addr, &rkey); err != nil {
		t.Fatal(err)
	}
	ep, err := ParseEndpoint(epS)
	if err != nil {
		t.Fatal(err)
	}
	cq, q := newRC(t, d)
	if err := q.Connect(ep); err != nil {
		t.Fatal(err)
	}
	buf := mapped(t, 128<<10)
	m, err := d.Register(buf, LocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	fmt.Printf("endpoint %s\n", q.Endpoint())
	var ack string
	if _, err := fmt.Fscanln(os.Stdin, &ack); err != nil || ack != "connected" {
		t.Fatalf("waiting for the parent's connect: %q, %v", ack, err)
	}
	for i := range 64 << 10 {
		buf[i] = byte(i*13 + 5)
	}
	if err := q.PostWrite(1, m, buf[:64<<10], addr+65536, rkey); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cq, 1, OpWrite)
	const n = len("the parent's own bytes, for the child to read")
	if err := q.PostRead(2, m, buf[100<<10:100<<10+n], addr+8192, rkey); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cq, 2, OpRead)
	fmt.Printf("read: %s\ndone\n", buf[100<<10:100<<10+n])
}
