package goshmem

import (
	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/node"
)

// TaskPanicError is the panic value of a PE that panicked in a chunk of
// another PE's task while it waited: the job fails as for any PE's
// panic, and the error names the owner, the task and the chunk.
type TaskPanicError = node.TaskPanicError

// MaxTaskChunks is the most chunks one Execute can have.
const MaxTaskChunks = job.TaskMaxChunks

// A Task is a piece of work that its owner splits into chunks and that
// the other PEs of the owner's host help with while they wait: the
// spin-steal waiting of the Pure runtime, across goroutine PEs and PE
// processes alike.
//
// Every PE creates the same tasks in the same order (NewTask is
// collective, like Malloc). A PE runs its task with Execute(n): it
// takes chunks first, and meanwhile any PE of its host that waits (in
// WaitUntil and its forms, SignalWaitUntil, SetLock, a barrier or any
// collective) runs single chunks of it between checks of what it waits
// for. Execute returns when all n chunks have run, whoever ran them.
//
// The body runs a range [lo, hi) of chunk numbers of the execution
// that PE owner started. It may run on any PE of the owner's host, in
// any process, with that PE's own registration of the body: it must
// reach the owner's data through Ptr (or TeamPtr), never through
// variables of the PE that created it, and chunks must not depend on
// each other. A body may use loads, stores and atomics on Ptr slices,
// and the RMA and AMO routines; a wait in it is a plain wait (it steals
// nothing), and it must not call a barrier or a collective, nor
// Execute. SHMEM_TASK_STEAL=off makes every owner run its own chunks.
type Task struct {
	pe *PE
	h  int
}

// NewTask registers body as a task on every PE (collective over
// TeamWorld: every PE calls it, with the same function, in the same
// order of task creations) and returns this PE's handle to it. It
// returns when every PE has registered, so chunks may be stolen from
// the first Execute on.
func NewTask(pe *PE, body func(owner, lo, hi int)) *Task {
	h := pe.TaskRegister(body)
	pe.SyncAs("NewTask") // a failure meanwhile names NewTask, not SyncAll
	return &Task{pe: pe, h: h}
}

// Execute runs chunks 0 to n-1 of the task with this PE as the owner
// and returns when every one of them has run once. n may be 0 (nothing
// runs) and at most MaxTaskChunks. A PE executes one task at a time.
// When a chunk that the owner runs panics, no PE starts another chunk
// of the execution, and Execute panics with the chunk's value once the
// chunks other PEs had started are done: a program that recovers may
// execute again. (A panic in a chunk another PE runs fails the job:
// see TaskPanicError.)
func (t *Task) Execute(n int) { t.pe.TaskExecute(t.h, n) }

// Destroy forgets the task on every PE (collective over TeamWorld). No
// PE may execute it afterwards.
func (t *Task) Destroy() {
	t.pe.SyncAs("Task.Destroy")
	t.pe.TaskDestroy(t.h)
}
