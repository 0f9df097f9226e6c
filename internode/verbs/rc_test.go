//go:build verbs && cgo && linux

package verbs

import (
	"bytes"
	"errors"
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
	var qs [2]*RC
	var cqs [2]*CQ
	var mrs [2]*MR
	bufs := [2][]byte{mapped(t, 1<<20), mapped(t, 1<<20)}
	for i := range qs {
		cq, err := d.NewCQ(64)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cq.Close() })
		q, err := d.NewRC(cq, cq, 32)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() })
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

	// A buffer outside the registration is refused before the NIC sees it.
	outside := mapped(t, 4096)
	if err := qs[0].PostWrite(5, mrs[0], outside, uint64(mrs[1].Addr), mrs[1].RKey); err == nil {
		t.Fatal("PostWrite of an unregistered buffer: no error")
	}
}

// TestOpenNamedMissing: a device name that does not exist gives the
// no-device error naming it.
func TestOpenNamedMissing(t *testing.T) {
	_, err := Open(Config{Device: "no-such-device0"})
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("err %v; want ErrNoDevice", err)
	}
}
