package backends_test

import (
	"fmt"

	"github.com/goshmem/goshmem/internode"
	"github.com/goshmem/goshmem/internode/backends"
	"github.com/goshmem/goshmem/internode/internodetest"
)

// heap is a Sink that lands payloads at Header.Off of a PE's heap.
type heap struct {
	mem  []byte
	done chan string
}

func (h *heap) Buffer(from int, hd *internode.Header) []byte {
	return h.mem[hd.Off : hd.Off+uint64(hd.Len)]
}
func (h *heap) Deliver(from int, hd *internode.Header, buf []byte) {
	h.done <- fmt.Sprintf("put of %d bytes from leader %d at offset %d: %q", hd.Len, from, hd.Off, buf)
}
func (h *heap) Failed(peer int, err error) { fmt.Println("lost leader", peer, err) }

// Two leaders on this host's loopback: leader 0 puts 5 bytes into
// leader 1's heap.
func Example() {
	x := internodetest.NewExchange(0) // the runtime passes its PMI client
	sinks := []*heap{{mem: make([]byte, 64), done: make(chan string)}, {mem: make([]byte, 64), done: make(chan string)}}
	var ts []internode.Transport
	for i := range 2 {
		t, err := backends.Open("tcp", internode.Config{
			Index: i, Leaders: 2, JobID: "example",
			Exchange: x.View(i), Sink: sinks[i], Iface: "127.0.0.1",
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer t.Close()
		ts = append(ts, t)
	}
	payload := []byte("hello")
	h := internode.Header{PE: 3, Off: 16, Len: uint32(len(payload))}
	if err := ts[0].Send(1, &h, payload); err != nil {
		fmt.Println(err)
		return
	}
	ts[0].Flush(1) // payload may be reused from here on
	fmt.Println(<-sinks[1].done)
	_, err := backends.Open("shm", internode.Config{Leaders: 1, Exchange: x.View(0), Sink: sinks[0]})
	fmt.Println(err)
	// Output:
	// put of 5 bytes from leader 0 at offset 16: "hello"
	// internode: no transport "shm" in this build; set SHMEM_INTERNODE to one of: tcp, verbs
}
