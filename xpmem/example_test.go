package xpmem_test

import (
	"fmt"
	"log"

	"github.com/goshmem/goshmem/shm"
	"github.com/goshmem/goshmem/xpmem"
)

// Export a segment, get it back through the text form of its id (as
// another process would), attach two ranges of it and see a write
// through one of them in the other.
func Example() {
	seg, err := shm.Create("example", 4096, shm.Options{})
	if err != nil {
		log.Fatal(err)
	}
	exp, err := xpmem.Make(seg, xpmem.PermitOwner)
	if err != nil {
		log.Fatal(err)
	}
	seg.Close() // the export holds its own descriptor
	defer exp.Remove()

	// This string is what would be sent to another process.
	text := exp.ID().String()

	id, err := xpmem.ParseSegid(text)
	if err != nil {
		log.Fatal(err)
	}
	acc, err := xpmem.Get(id)
	if err != nil {
		log.Fatal(err)
	}
	defer acc.Release()

	w, err := acc.Attach(100, 5)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Detach()
	copy(w.Bytes(), "hello")

	r, err := acc.Attach(0, acc.Size())
	if err != nil {
		log.Fatal(err)
	}
	defer r.Detach()
	fmt.Printf("%s\n", r.Bytes()[100:105])
	// Output: hello
}

// A runtime that inherited a descriptor of every heap maps them with
// Local; no pidfds are involved.
func ExampleLocal() {
	heap, err := shm.Create("heap", 8192, shm.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer heap.Close()
	acc, err := xpmem.Local(heap)
	if err != nil {
		log.Fatal(err)
	}
	defer acc.Release()
	a, err := acc.Attach(4096, 4096)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Detach()
	fmt.Println(len(a.Bytes()))
	// Output: 4096
}
