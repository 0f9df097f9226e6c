package sys

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestWritevTry: Try writes the buffers in order, never waits on a full
// socket (it returns 0 then), and what it wrote arrives intact.
func TestWritevTry(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer := <-acc
	defer peer.Close()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := DupConn(rc) // (non-blocking, as the runtime keeps it)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fd)
	w := NewWritev()
	// Small buffers, one empty: all of it goes at once.
	bufs := [][]byte{[]byte("head"), nil, []byte("-payload")}
	if n, err := w.Try(fd, bufs); n != 12 || err != nil {
		t.Fatalf("Try = %d, %v; want 12, nil", n, err)
	}
	got := make([]byte, 12)
	io.ReadFull(peer, got)
	if string(got) != "head-payload" {
		t.Fatalf("read %q", got)
	}
	// Nobody reads: the socket fills, and Try returns 0 instead of
	// waiting.
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	total := 0
	var parts []int
	start := time.Now()
	for k := 0; ; k++ {
		n, err := w.Try(fd, [][]byte{big})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		total += n
		parts = append(parts, n)
		if k > 10000 || time.Since(start) > 10*time.Second {
			t.Fatal("the socket never filled")
		}
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("filling the socket took %v: Try waited", time.Since(start))
	}
	// What was written arrives in order.
	rd := make([]byte, total)
	if _, err := io.ReadFull(peer, rd); err != nil {
		t.Fatal(err)
	}
	off := 0
	for _, n := range parts {
		if !bytes.Equal(rd[off:off+n], big[:n]) {
			t.Fatalf("bytes %d-%d differ", off, off+n)
		}
		off += n
	}
}
