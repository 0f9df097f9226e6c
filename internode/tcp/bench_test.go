package tcp

import (
	"io"
	"net"
	"testing"

	"github.com/goshmem/goshmem/internode"
)

// echo is a Sink that answers every frame to leader 0 (at leader 1) or
// signals its arrival (at leader 0).
type echo struct {
	t    *Transport
	back chan struct{}
	buf  []byte
}

func (e *echo) Buffer(from int, h *internode.Header) []byte { return e.buf[:h.Len] }
func (e *echo) Deliver(from int, h *internode.Header, buf []byte) {
	if e.back != nil {
		e.back <- struct{}{}
		return
	}
	e.t.Send(from, h, buf)
}
func (e *echo) Failed(int, error) {}

// BenchmarkPingPong is a frame of size bytes to another leader on
// loopback and back: compare with BenchmarkRawPingPong for what the
// transport adds.
func BenchmarkPingPong(b *testing.B) {
	for _, size := range []int{8, 1 << 20} {
		b.Run(byteSize(size), func(b *testing.B) {
			s0 := &echo{back: make(chan struct{}, 1), buf: make([]byte, size)}
			s1 := &echo{buf: make([]byte, size)}
			t0, a0, _ := Listen(internode.Config{Index: 0, Leaders: 2, JobID: "b", Sink: s0, Iface: "127.0.0.1"})
			t1, a1, _ := Listen(internode.Config{Index: 1, Leaders: 2, JobID: "b", Sink: s1, Iface: "127.0.0.1"})
			defer t0.Close()
			defer t1.Close()
			s1.t = t1.(*Transport)
			t0.Start([]string{a0, a1})
			t1.Start([]string{a0, a1})
			p := make([]byte, size)
			h := internode.Header{Len: uint32(size)}
			b.SetBytes(int64(2 * size))
			b.ResetTimer()
			for range b.N {
				t0.Send(1, &h, p)
				<-s0.back
			}
		})
	}
}

// BenchmarkRawPingPong is the same exchange over a bare TCP connection
// on loopback (the limit).
func BenchmarkRawPingPong(b *testing.B) {
	for _, size := range []int{8, 1 << 20} {
		b.Run(byteSize(size), func(b *testing.B) {
			ln, _ := net.Listen("tcp", "127.0.0.1:0")
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				buf := make([]byte, size)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					c.Write(buf)
				}
			}()
			c, _ := net.Dial("tcp", ln.Addr().String())
			defer c.Close()
			p := make([]byte, size)
			b.SetBytes(int64(2 * size))
			b.ResetTimer()
			for range b.N {
				c.Write(p)
				io.ReadFull(c, p)
			}
		})
	}
}

func byteSize(n int) string {
	if n >= 1<<20 {
		return "1MiB"
	}
	return "8B"
}
