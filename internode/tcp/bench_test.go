package tcp

import (
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/goshmem/goshmem/internode"
)

// echo is a Sink that answers every frame (at leader 1) or signals its
// arrival (at leader 0), reading payloads into one buffer.
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
	e.t.Reply(from, h, buf)
}
func (e *echo) Failed(int, error) {}

var sizes = []struct {
	name string
	n    int
}{{"8B", 8}, {"1MiB", 1 << 20}}

// BenchmarkPingPong is a frame of n bytes to another leader on loopback
// and back: compare with BenchmarkRawPingPong for what the transport
// adds.
func BenchmarkPingPong(b *testing.B) {
	for _, size := range sizes {
		b.Run(size.name, func(b *testing.B) {
			s0 := &echo{back: make(chan struct{}, 1), buf: make([]byte, size.n)}
			s1 := &echo{buf: make([]byte, size.n)}
			l := start(b, 2, nil, []internode.Sink{s0, s1})
			s1.t = l.ts[1]
			p := make([]byte, size.n)
			h := internode.Header{Len: uint32(size.n)}
			l.ts[0].Send(1, &h, p) // connect both ways
			<-s0.back
			b.SetBytes(int64(2 * size.n))
			b.ResetTimer()
			for range b.N {
				l.ts[0].Send(1, &h, p)
				<-s0.back
			}
		})
	}
}

// BenchmarkRawPingPong is the same exchange over a bare TCP connection
// on loopback (the limit): a write, and a read of the whole message.
func BenchmarkRawPingPong(b *testing.B) {
	for _, size := range sizes {
		b.Run(size.name, func(b *testing.B) {
			c, stop := rawPair(b, func(c net.Conn) {
				buf := make([]byte, size.n)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					c.Write(buf)
				}
			})
			defer stop()
			p := make([]byte, size.n)
			b.SetBytes(int64(2 * size.n))
			b.ResetTimer()
			for range b.N {
				c.Write(p)
				io.ReadFull(c, p)
			}
		})
	}
}

// BenchmarkRawPingPongHandoff is BenchmarkRawPingPong with the answer
// read by another goroutine that hands it to the sender through a
// channel, as a transport's reader hands frames to the core: the
// difference to BenchmarkRawPingPong is the hand-off, the difference
// to BenchmarkPingPong is the transport.
func BenchmarkRawPingPongHandoff(b *testing.B) {
	for _, size := range sizes {
		b.Run(size.name, func(b *testing.B) {
			c, stop := rawPair(b, func(c net.Conn) {
				buf := make([]byte, size.n)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					c.Write(buf)
				}
			})
			defer stop()
			back := make(chan struct{}, 1)
			go func() {
				buf := make([]byte, size.n)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					back <- struct{}{}
				}
			}()
			p := make([]byte, size.n)
			b.SetBytes(int64(2 * size.n))
			b.ResetTimer()
			for range b.N {
				c.Write(p)
				<-back
			}
		})
	}
}

// countSink signals when it has received want frames.
type countSink struct {
	buf  []byte
	n    int
	want int
	done chan struct{}
}

func (s *countSink) Buffer(from int, h *internode.Header) []byte { return s.buf[:h.Len] }
func (s *countSink) Deliver(int, *internode.Header, []byte) {
	if s.n++; s.n == s.want {
		s.done <- struct{}{}
	}
}
func (s *countSink) Failed(int, error) {}

// BenchmarkStream is b.N frames of n bytes one way, written from one
// buffer (the transport does not copy: the bench reuses it only
// because its content does not matter) and read into one.
func BenchmarkStream(b *testing.B) {
	for _, size := range sizes {
		b.Run(size.name, func(b *testing.B) {
			s1 := &countSink{buf: make([]byte, size.n), done: make(chan struct{})}
			l := start(b, 2, nil, []internode.Sink{newSink(0), s1})
			p := make([]byte, size.n)
			h := internode.Header{Len: uint32(size.n)}
			s1.want = 1
			l.ts[0].Send(1, &h, p)
			<-s1.done
			s1.n, s1.want = 0, b.N
			b.SetBytes(int64(size.n))
			b.ResetTimer()
			for range b.N {
				l.ts[0].Send(1, &h, p)
			}
			<-s1.done
		})
	}
}

// BenchmarkStreamBatch is BenchmarkStream/8B sent with SendBatch, 64
// frames a call (a leader that drains its host's queue): ns/op is per
// frame.
func BenchmarkStreamBatch(b *testing.B) {
	const n, per = 8, 64
	s1 := &countSink{buf: make([]byte, n), done: make(chan struct{})}
	l := start(b, 2, nil, []internode.Sink{newSink(0), s1})
	p := make([]byte, n)
	batch := make([]internode.Frame, per)
	for i := range batch {
		batch[i] = internode.Frame{Header: internode.Header{Len: n}, Payload: p}
	}
	s1.want = 1
	l.ts[0].Send(1, &batch[0].Header, p)
	<-s1.done
	s1.n, s1.want = 0, (b.N+per-1)/per*per
	b.SetBytes(n)
	b.ResetTimer()
	for k := 0; k < b.N; k += per {
		l.ts[0].SendBatch(1, batch)
	}
	<-s1.done
}

// BenchmarkRawStream is the same over a bare TCP connection: one write
// per message, the receiver reading each message whole.
func BenchmarkRawStream(b *testing.B) {
	for _, size := range sizes {
		b.Run(size.name, func(b *testing.B) {
			done := make(chan struct{})
			var n atomic.Int64
			c, stop := rawPair(b, func(c net.Conn) {
				buf := make([]byte, size.n)
				for k := 0; ; k++ {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					if int64(k) == n.Load() {
						done <- struct{}{}
					}
				}
			})
			defer stop()
			p := make([]byte, size.n)
			c.Write(p)
			<-done
			n.Store(int64(b.N))
			b.SetBytes(int64(size.n))
			b.ResetTimer()
			for range b.N {
				c.Write(p)
			}
			<-done
		})
	}
}

// rawPair connects to a loopback listener whose one connection serve
// handles.
func rawPair(b *testing.B, serve func(net.Conn)) (net.Conn, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	return c, func() { c.Close(); ln.Close() }
}
