package main

// The TCP limit across hosts: what a goshmem leader's transport is
// compared with. One side (tcp -listen) echoes; the other (tcp
// -connect) measures, for each size, the one-way latency of a
// ping-pong (a write of size bytes answered by one of the same size,
// half the round trip) and the bandwidth of a one-way stream of size
// byte writes acknowledged by one byte at the end. Both sides set
// TCP_NODELAY, as the transport does.
//
// For the smallest size it also times an exchange: both sides write,
// then each reads the other's message (polling), over and over: the
// floor of a two-host barrier or of one exchange of a reduction, which
// on one connection is not one one-way latency (the two writes do not
// overlap on loopback: 8.9-10.2 us per exchange against 4.5-5.1 us one
// way). The row "SIZE exchange" is the time of one exchange.
//
// The ping-pong runs two ways, and the latency row is the better of
// them (a limit is the best the machine does): both sides blocking in
// the runtime's network poller, and both sides polling their socket
// with non-blocking reads in a loop (what a goshmem leader PE does
// while it waits). The poller's wake-ups are bimodal on a small VM
// (10-47 us one way), so against it alone goshmem's polling leaders
// ran faster than the "limit".

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sort"
	"syscall"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
)

// tcpHeader is what the client tells the echo side before each size:
// the size and how many ping-pongs, then how many stream writes.
type tcpHeader struct {
	Size, PingPongs, Stream uint64
	Poll                    uint64 // 1: the ping-pongs' reads poll
	Exchange                uint64 // 1: exchanges (both write, then read) instead of ping-pongs
	Relay                   uint64 // > 0: the echo side relays each ping-pong through its second process, spinning this many polls (relay.go)
}

func runTCP(args []string) (*table, error) {
	fs := flag.NewFlagSet("tcp", flag.ContinueOnError)
	listen := fs.String("listen", "", "echo side: the address to listen on (`host:port`); serves until killed")
	connect := fs.String("connect", "", "measuring side: the echo side's `host:port`")
	minSize := fs.Int("min", 8, "smallest message in bytes")
	maxSize := fs.Int("max", 1<<20, "largest message in bytes (sizes double)")
	iters := fs.Int("i", 10000, "ping-pongs per size (a tenth above 64 KiB)")
	reps := fs.Int("r", 5, "timed blocks; the median is reported")
	relayed := fs.Bool("relay", false, "also time the smallest size's ping-pong relayed on the echo side through a second process (relay.go)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case *listen != "" && *connect != "", *listen == "" && *connect == "":
		return nil, errors.New("tcp: give one of -listen (the echo side) or -connect (the measuring side)")
	case *listen != "":
		return nil, tcpEcho(*listen)
	case *minSize < 1 || *maxSize < *minSize || *iters < 1 || *reps < 1:
		return nil, errors.New("tcp: need 1 <= -min <= -max, -i >= 1, -r >= 1")
	}
	c, err := net.Dial("tcp", *connect)
	if err != nil {
		return nil, fmt.Errorf("tcp: %v (start `limits tcp -listen ADDR` on the other host first)", err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	t := &table{test: "tcp", cols: [2]string{"Size", "Latency (us) / Bandwidth (MB/s)"}, prec: 2}
	t.notes = append(t.notes, fmt.Sprintf("to %s; latency: half a ping-pong's round trip; bandwidth: a one-way stream; median of %d blocks", *connect, *reps))
	buf := make([]byte, *maxSize)
	for size := *minSize; size <= *maxSize; size *= 2 {
		n := *iters
		if size > 64<<10 {
			n = max(n/10, 10)
		}
		per := max(n / *reps, 1)
		stream := max(min(int((64<<20)/size), 50000), 16) // 50,000 small writes take seconds, 8 M took minutes
		var lat, plat, bw []float64
		for rep := range 2 * *reps {
			poll := rep%2 == 1
			h := tcpHeader{Size: uint64(size), PingPongs: uint64(per), Stream: uint64(stream)}
			if poll {
				h.Poll, h.Stream = 1, 0
			}
			if err := binary.Write(c, binary.LittleEndian, h); err != nil {
				return nil, err
			}
			start := time.Now()
			for range per {
				if _, err := c.Write(buf[:size]); err != nil {
					return nil, err
				}
				if err := readFull(c, buf[:size], poll); err != nil {
					return nil, err
				}
			}
			if poll {
				plat = append(plat, time.Since(start).Seconds()*1e6/float64(2*per))
				if _, err := io.ReadFull(c, buf[:1]); err != nil { // the end of the (empty) stream
					return nil, err
				}
				continue
			}
			lat = append(lat, time.Since(start).Seconds()*1e6/float64(2*per))
			start = time.Now()
			for range stream {
				if _, err := c.Write(buf[:size]); err != nil {
					return nil, err
				}
			}
			if _, err := io.ReadFull(c, buf[:1]); err != nil {
				return nil, err
			}
			bw = append(bw, float64(stream*size)/time.Since(start).Seconds()/1e6)
		}
		if size == *minSize {
			var ex []float64
			for range *reps {
				if err := binary.Write(c, binary.LittleEndian, tcpHeader{Size: uint64(size), PingPongs: uint64(per), Exchange: 1}); err != nil {
					return nil, err
				}
				start := time.Now()
				for range per {
					if _, err := c.Write(buf[:size]); err != nil {
						return nil, err
					}
					if err := readFull(c, buf[:size], true); err != nil {
						return nil, err
					}
				}
				ex = append(ex, time.Since(start).Seconds()*1e6/float64(per))
				if _, err := io.ReadFull(c, buf[:1]); err != nil {
					return nil, err
				}
			}
			sort.Float64s(ex)
			t.rows = append(t.rows, row{fmt.Sprintf("%d exchange", size), ex[len(ex)/2]})
			if *relayed {
				rows, err := relayRows(c, buf[:size], per, *reps)
				if err != nil {
					return nil, err
				}
				t.rows = append(t.rows, rows...)
			}
		}
		sort.Float64s(lat)
		sort.Float64s(plat)
		sort.Float64s(bw)
		blocking, polling := lat[len(lat)/2], plat[len(plat)/2]
		t.rows = append(t.rows, row{fmt.Sprintf("%d latency", size), min(blocking, polling)},
			row{fmt.Sprintf("%d latency blocking", size), blocking}, row{fmt.Sprintf("%d latency polling", size), polling},
			row{fmt.Sprintf("%d bandwidth", size), bw[len(bw)/2]})
	}
	return t, nil
}

// tcpEcho serves measuring sides one at a time until it is killed.
func tcpEcho(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("tcp: %v", err)
	}
	fmt.Printf("# echoing on %s\n", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		c.(*net.TCPConn).SetNoDelay(true)
		serveEcho(c)
		c.Close()
	}
}

func serveEcho(c net.Conn) {
	var buf []byte
	var r *relay
	defer func() {
		if r != nil {
			r.close()
		}
	}()
	for {
		var h tcpHeader
		if err := binary.Read(c, binary.LittleEndian, &h); err != nil {
			return
		}
		if h.Size > 1<<30 {
			return
		}
		if uint64(len(buf)) < h.Size {
			buf = make([]byte, h.Size)
		}
		b := buf[:h.Size]
		if h.Relay > 0 {
			if r == nil {
				var err error
				if r, err = startRelay(); err != nil {
					fmt.Fprintf(os.Stderr, "limits tcp: relay: %v\n", err)
					return // the client sees the connection end
				}
			}
			r.p.w.aux.Store(h.Relay)
			for range h.PingPongs {
				if err := readFull(c, b, true); err != nil {
					return
				}
				if err := r.round(h.Relay); err != nil {
					fmt.Fprintf(os.Stderr, "limits tcp: relay: %v\n", err)
					return
				}
				if _, err := c.Write(b); err != nil {
					return
				}
			}
			if _, err := c.Write(b[:1]); err != nil {
				return
			}
			continue
		}
		for range h.PingPongs * h.Exchange {
			if _, err := c.Write(b); err != nil {
				return
			}
			if err := readFull(c, b, true); err != nil {
				return
			}
		}
		if h.Exchange == 1 {
			h.PingPongs = 0
		}
		for range h.PingPongs {
			if err := readFull(c, b, h.Poll == 1); err != nil {
				return
			}
			if _, err := c.Write(b); err != nil {
				return
			}
		}
		for range h.Stream {
			if _, err := io.ReadFull(c, b); err != nil {
				return
			}
		}
		if _, err := c.Write(b[:1]); err != nil {
			return
		}
	}
}

// readFull reads len(b) bytes from c: blocking in the network poller,
// or, with poll, with non-blocking reads in a loop that never waits in
// the poller.
func readFull(c net.Conn, b []byte, poll bool) error {
	if !poll {
		_, err := io.ReadFull(c, b)
		return err
	}
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return err
	}
	got := 0
	var rerr error
	read := func(fd uintptr) bool {
		n, again, err := sys.Recv(fd, b[got:])
		switch {
		case err != nil:
			rerr = err
		case n == 0 && !again:
			rerr = io.ErrUnexpectedEOF
		}
		got += n
		return true // never wait in the poller
	}
	for got < len(b) && rerr == nil {
		if err := rc.Read(read); err != nil {
			return err
		}
	}
	return rerr
}

// relayRows times the relayed ping-pong of len(b) bytes (see relay.go),
// reps blocks of per round trips for each of relaySpins, and returns a
// row per spin count and the row "SIZE relay latency", the better
// median: half a round trip, as the latency rows.
func relayRows(c net.Conn, b []byte, per, reps int) ([]row, error) {
	var rows []row
	best := math.Inf(1)
	for _, spins := range relaySpins {
		var lat []float64
		for range reps {
			if err := binary.Write(c, binary.LittleEndian, tcpHeader{Size: uint64(len(b)), PingPongs: uint64(per), Poll: 1, Relay: spins}); err != nil {
				return nil, err
			}
			start := time.Now()
			for range per {
				if _, err := c.Write(b); err != nil {
					return nil, err
				}
				if err := readFull(c, b, true); err != nil {
					return nil, fmt.Errorf("tcp: relayed ping-pong: %v (see the echo side's messages)", err)
				}
			}
			lat = append(lat, time.Since(start).Seconds()*1e6/float64(2*per))
			if _, err := io.ReadFull(c, b[:1]); err != nil {
				return nil, err
			}
		}
		sort.Float64s(lat)
		m := lat[len(lat)/2]
		best = min(best, m)
		rows = append(rows, row{fmt.Sprintf("%d relay latency spin %d", len(b), spins), m})
	}
	return append(rows, row{fmt.Sprintf("%d relay latency", len(b)), best}), nil
}
