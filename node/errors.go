package node

import (
	"fmt"
	"os"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
)

// JobError is the panic value of a wait, barrier or collective that
// cannot complete because the job failed: a PE died, called
// GlobalExit, or the launcher stopped the job. RunLocal and Main
// recover it and report it as the job's error.
type JobError struct {
	Routine string // the routine that noticed, e.g. "BarrierAll"
	PE      int    // the PE that noticed
	Cause   string // what happened, naming the failed PE
	Kind    uint32 // job.Abort* kind
	Failed  int    // the failed PE (-1: none, e.g. timeout)
	Code    int    // exit code, signal or GlobalExit status
}

func (e *JobError) Error() string {
	return fmt.Sprintf("goshmem: %s on PE %d stopped: %s", e.Routine, e.PE, e.Cause)
}

//go:noinline
func panicf(format string, args ...any) {
	panic(fmt.Sprintf("goshmem."+format, args...))
}

//go:noinline
func badPE(routine string, pe, npes int) {
	panicf("%s: PE %d out of range [0, %d)", routine, pe, npes)
}

//go:noinline
func badAddr(routine, arg string, addr, n uintptr, p *PE) {
	h := p.heap
	if n == 0 {
		n = 1
	}
	panicf("%s: %s [%#x, %#x) is not inside the symmetric heap [%#x, %#x) of PE %d; "+
		"allocate it with goshmem.Malloc (or Calloc, Align)",
		routine, arg, addr, addr+n, uintptr(h.Base), uintptr(h.Base)+h.Size, p.me)
}

// CheckWord panics, naming routine and its argument arg, unless an AMO
// on the word [addr, addr+size) of PE pe through c would succeed: c is
// not destroyed, pe is a PE, the word lies in the symmetric heap,
// aligned to size, and under SHMEM_DEBUG inside a live allocation. A
// routine that updates such a word after writing other memory (PutSignal
// updates sig after the data) calls it first, so that it fails before
// it has changed anything.
//
//go:noinline
func (c *Ctx) CheckWord(routine, arg string, addr, size uintptr, pe int) {
	c.live(routine)
	c.worldPE(routine, pe)
	c.pe.checkWord(routine, arg, addr, size)
}

// checkWord is CheckWord's test of the word, in the calling PE's terms
// (the test of every AMO's word): it returns the word's offset in the
// heap.
func (p *PE) checkWord(routine, arg string, addr, size uintptr) uintptr {
	off := p.symOffset(routine, arg, addr, size)
	if off&(size-1) != 0 {
		panicf("%s: %s %#x is not aligned to %d bytes", routine, arg, addr, size)
	}
	return off
}

//go:noinline
func badLen(routine string, dst, src int) {
	panicf("%s: dest has %d elements but source has %d; the slices must have the same length", routine, dst, src)
}

// abortError is the JobError of routine on PE me when job j has
// failed, nil otherwise. A PE of this process that panicked is named
// with what it panicked with.
func abortError(routine string, me int, j *Job) *JobError {
	kind, pe, pid, code, ok := j.ctl.Header.Abort.Settled()
	if !ok {
		return nil
	}
	cause := job.Describe(kind, pe, pid, code)
	if m := j.panicked.Load(); m != nil && (kind == job.AbortPanic || kind == job.AbortStart) && pid == os.Getpid() {
		cause += ": " + *m
	}
	return &JobError{Routine: routine, PE: me, Cause: cause, Kind: kind, Failed: pe, Code: code}
}

var _ = mem.Addr[byte]
