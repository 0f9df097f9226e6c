package node

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/wait"
)

// Tasks that waiting PEs steal (Pure's spin-steal waiting loop).
//
// A task is a body func(owner, lo, hi int) over a range of chunk
// numbers, registered by every PE under the same handle (TaskRegister
// is collective, like symmetric allocation). Its owner executes it
// (TaskExecute): it publishes the execution on its entry of the host's
// task board (job.Task, in its control slot), runs chunks itself, and
// returns when every chunk has been run, by it or by PEs of its host
// that were waiting meanwhile. A thief runs a chunk with its own
// registration of the body (in its own process), passing the owner, so
// the body reaches the owner's data through Ptr.
//
// Claiming is lock-free: one Claim word per owner (count, next chunk;
// see job.Task). The owner claims batches, a thief one
// chunk, both with an atomic add. The owner counts its own chunks
// privately; thieves add theirs to the owner's TaskDone and
// ring its doorbell, and the owner waits until the two add up to the
// count. The host's Header.Tasks counts owners with chunks left to
// claim, so a wait's idle steal check is one load.

// What a PE's busy word holds.
const (
	busyTask = 1 // the PE executes a task (TaskExecute)
	busyCopy = 2 // the PE executes a shared copy (CopyLarge)
)

// TaskFunc is the body of a task: run the chunks [lo, hi) of the
// execution that PE owner started. It runs on the owner or on another
// PE of the owner's host, and reaches the owner's data through Ptr.
type TaskFunc func(owner, lo, hi int)

// task is one registration of a body on a PE.
type task struct {
	fn   TaskFunc
	name string // the body's function name, for messages
	hash uint32 // of name: the same body on every PE, in every process
}

// tasks is a PE's part of the task machinery.
type tasks struct {
	// reg: the registered bodies by handle (nil entries: destroyed), a
	// slice replaced on every change, so that thieves read it without
	// a lock while another goroutine of the PE registers.
	reg atomic.Pointer[[]task]
	// board is the host's count of tasks open for stealing
	// (Header.Tasks); nil when no PE of the host steals from this one's
	// tasks (SHMEM_TASK_STEAL off, or no host-mate's heap mapped here).
	board *atomic.Uint32
	// from is board while this PE's waits steal (SetTaskSteal), nil
	// when they do not.
	from atomic.Pointer[atomic.Uint32]
	// victims: the PEs of this host whose heaps this process maps,
	// other than this PE: those it steals from, and those it wakes when
	// it opens a task (their slots and bells).
	victims []int
	// busy is busyTask while this PE executes a task, busyCopy while it
	// executes a shared copy (sharecopy.go): one at a time.
	busy atomic.Uint32
	// stealing is set while this PE runs a chunk it stole: one at a
	// time, and a wait inside that chunk does not steal again.
	stealing atomic.Bool
	rand     uint32 // where the next search for a victim starts (under stealing)
	// order is victims with those on this PE's NUMA node first (near
	// of them), made at the first steal, once every PE has published
	// its node (under stealing).
	order  []int
	near   int
	stolen atomic.Uint64
	// copy is the built-in copy task's body (copyChunks), share the
	// smallest copy CopyLarge shares (0: none), and tune[i] chooses
	// whether to share the copies of 2^(i+16) to 2^(i+17) bytes
	// (sharecopy.go).
	copy  task
	share int
	tune  [shareTuned]*mem.Chooser
}

// initTasks prepares p's task state once the job's mappings are known.
func (p *PE) initTasks() {
	empty := []task{}
	p.task.reg.Store(&empty)
	for q := range p.peers {
		if q != p.me && p.peers[q].base != nil {
			p.task.victims = append(p.task.victims, q)
		}
	}
	p.task.rand = uint32(p.me)*0x9e3779b9 + 1
	if !p.job.cfg.TaskNoSteal && len(p.task.victims) > 0 {
		p.task.board = &p.job.ctl.Header.Tasks.Uint32
		p.task.from.Store(p.task.board)
	}
}

// SetTaskSteal turns stealing in this PE's waits on or off (it is on
// by default, unless SHMEM_TASK_STEAL is off: then this does nothing),
// e.g. around a phase where a wait must not be delayed by a chunk. The
// PE's own tasks can still be stolen by others.
func (p *PE) SetTaskSteal(on bool) {
	if on {
		p.task.from.Store(p.task.board)
	} else {
		p.task.from.Store(nil)
	}
}

// TaskRegister registers body under the next handle of this PE and
// returns the handle. Every PE must register the same bodies in the
// same order (the caller makes it collective).
func (p *PE) TaskRegister(body TaskFunc) int {
	if body == nil {
		panicf("NewTask: body is nil")
	}
	name := "?"
	if f := runtime.FuncForPC(reflect.ValueOf(body).Pointer()); f != nil {
		name = f.Name()
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	old := *p.task.reg.Load()
	reg := append(old[:len(old):len(old)], task{fn: body, name: name, hash: h.Sum32()})
	p.task.reg.Store(&reg)
	return len(reg) - 1
}

// TaskDestroy forgets the body registered under handle (the caller
// makes it collective, after every execution of it has ended).
func (p *PE) TaskDestroy(handle int) {
	old := *p.task.reg.Load()
	p.taskBody("Task.Destroy", handle)
	reg := append([]task(nil), old...)
	reg[handle] = task{}
	p.task.reg.Store(&reg)
}

// taskBody returns the body registered under handle, or panics naming
// routine.
func (p *PE) taskBody(routine string, handle int) *task {
	reg := *p.task.reg.Load()
	if uint(handle) >= uint(len(reg)) || reg[handle].fn == nil {
		panicf("%s: task %d was destroyed or never created on PE %d", routine, handle, p.me)
	}
	return &reg[handle]
}

// TasksStolen returns how many chunks this PE has run of other PEs'
// tasks.
func (p *PE) TasksStolen() uint64 { return p.task.stolen.Load() }

// TaskExecute runs the n chunks of the task registered under handle,
// with this PE as the owner, and returns when all of them have been
// run: by this PE, which takes chunks first, and by PEs of its host
// that wait meanwhile, one chunk at a time. A PE executes one task at
// a time: TaskExecute from inside a chunk, or from two goroutines of
// one PE at once, panics.
func (p *PE) TaskExecute(handle, n int) {
	t := p.taskBody("Task.Execute", handle)
	if n <= 0 {
		if n < 0 {
			panicf("Task.Execute: %d chunks out of range [0, %d]", n, job.TaskMaxChunks)
		}
		return
	}
	if n > job.TaskMaxChunks {
		panicf("Task.Execute: %d chunks out of range [0, %d]", n, job.TaskMaxChunks)
	}
	for !p.task.busy.CompareAndSwap(0, busyTask) {
		if p.task.busy.Load() == busyCopy {
			// Another goroutine of this PE shares a copy: it ends
			// within a copy's time.
			runtime.Gosched()
			continue
		}
		panicf("Task.Execute: PE %d already executes a task (Execute called from inside a chunk, or from two goroutines of the PE at once): a PE executes one task at a time", p.me)
	}
	if p.task.board == nil {
		p.runAlone(t, n) // nobody can steal
		return
	}
	p.executeShared(t, handle, n, false)
}

// runAlone runs all n chunks of t on the owner, in one call, and ends
// the PE's execution, also when the body panics: a program that
// recovers may execute again.
func (p *PE) runAlone(t *task, n int) {
	defer p.task.busy.Store(0)
	t.fn(p.me, 0, n)
}

// executeShared is TaskExecute of a task that host-mates may steal
// from; thieves claim batches if batch (job.Task), else one chunk at a
// time.
func (p *PE) executeShared(t *task, handle, n int, batch bool) {
	e := &p.slot.Task
	// Guided self-scheduling: the owner claims a share of what is left
	// from the front, so that it claims rarely, and its last batches
	// are single chunks; thieves claim from the back (job.Task). With
	// batches on both ends everyone's share is 1/(host PEs) of what is
	// left (a 2-PE copy: the owner's first half, then a quarter by the
	// thief...); with single-chunk thieves the owner takes
	// 1/(2 x host PEs). Work first: its first batch is claimed before
	// the task is published.
	share := len(p.task.victims) + 1
	if !batch {
		share *= 2
	}
	lo, hi := 0, max(n/share, 1)
	if hi == n {
		p.runAlone(t, n) // nothing left for thieves
		return
	}
	// Plain stores in order (release order on amd64), then the board's
	// add, which drains them: an XCHG each waited in turn for its line,
	// which the last execution's thieves hold (the entry line after
	// their claims, TaskDone after their adds).
	mem.StoreRelease(&e.Handle, uint32(handle))
	mem.StoreRelease(&e.Fn, t.hash)
	mem.StoreRelease64(&p.slot.TaskDone.Uint64, 0)
	mem.StoreRelease64(&e.Claim, job.TaskClaim(hi, n, batch))
	open := true
	p.task.board.Add(1)
	defer func() {
		if open {
			p.endFailed(e, n, hi) // the body panicked in the batch that ends at hi
		}
	}()
	// Wake host-mates asleep in a wait: they steal once awake. A ring
	// is one load where nobody sleeps.
	for _, q := range p.task.victims {
		wait.Ring(p.peers[q].door)
	}
	mine := 0
	abort := &p.job.ctl.Header.Abort.State
	for {
		t.fn(p.me, lo, hi)
		mine += hi - lo
		if abort.Load() != 0 {
			p.checkAbort("Task.Execute") // e.g. a thief's chunk panicked: stop here
		}
		front, back, _ := job.TaskUnpack(e.Claim.Load())
		k := max((back-front)/share, 1)
		front, back, _ = job.TaskUnpack(e.Claim.Add(uint64(k)))
		lo, hi = front-k, min(front, back)
		if lo >= hi {
			break
		}
	}
	open = false
	p.task.board.Add(^uint32(0))
	rest := uint64(n - mine)
	if done := &p.slot.TaskDone.Uint64; done.Load() < rest {
		p.waitSlow("Task.Execute", p.policy, func() bool { return done.Load() >= rest })
	}
	p.task.busy.Store(0)
}

// endFailed ends an execution of n chunks whose owner's chunk panicked
// (the panic goes on afterwards): no thief may claim another chunk, and
// once the thieves have run those they had claimed (they read the
// entry, and add to TaskDone, until they are done), the PE may execute
// again, which a program that recovers from the panic may do. In a job
// that fails meanwhile the PE stays busy: every wait panics anyway.
//
// mine is where the owner's claims end: they are contiguous from chunk
// 0, and the batch that panicked ends at mine. The thieves claimed the
// rest but what was still unclaimed at the Swap, [front, back) if not
// empty. (n - max(front, back) counted too few when the owner's last
// claim, made from a stale back, ran past it: front then exceeds where
// the owner's chunks end, and the owner stopped waiting for a thief
// still running a chunk, whose late add to TaskDone fell into the next
// execution.)
func (p *PE) endFailed(e *job.Task, n, mine int) {
	old := e.Claim.Swap(job.TaskClaim(n, n, false))
	p.task.board.Add(^uint32(0))
	front, back, _ := job.TaskUnpack(old)
	claimed := uint64(n - mine - max(back-front, 0)) // by thieves, from the back
	abort := &p.job.ctl.Header.Abort.State
	if done := &p.slot.TaskDone.Uint64; done.Load() < claimed && abort.Load() == 0 {
		// A plain wait: the PE steals no chunk while it unwinds.
		plain := p.task.stealing.CompareAndSwap(false, true)
		p.waitSlow("Task.Execute", p.policy, func() bool { return done.Load() >= claimed || abort.Load() != 0 })
		if plain {
			p.task.stealing.Store(false)
		}
	}
	if abort.Load() == 0 {
		p.task.busy.Store(0)
	}
}

// steal runs one chunk of a task of a host-mate, if one has chunks
// left, and reports whether it did. Waits call it between checks of
// their condition when the host's board is not empty.
//
//go:noinline
func (p *PE) steal() bool {
	if p.job.ctl.Header.Abort.State.Load() != 0 || !p.task.stealing.CompareAndSwap(false, true) {
		return false
	}
	ran := p.stealOne()
	p.task.stealing.Store(false)
	return ran
}

// stealOne looks for a chunk among the victims, those on this PE's
// NUMA node first, each group from a pseudo-random start (as Pure and
// Cilk probe), and runs it.
func (p *PE) stealOne() bool {
	if p.task.order == nil {
		p.task.order, p.task.near = nearFirst(p.task.victims, p.NUMANode(p.me), p.NUMANode)
	}
	vs, near := p.task.order, p.task.near
	p.task.rand ^= p.task.rand << 13
	p.task.rand ^= p.task.rand >> 17
	p.task.rand ^= p.task.rand << 5
	reg := *p.task.reg.Load()
	for i := range vs {
		// Victims [0, near) first, then [near, len(vs)), each from its
		// own start.
		lo, size := 0, near
		if i >= near {
			lo, size = near, len(vs)-near
		}
		o := vs[lo+(int(p.task.rand%uint32(size))+i-lo)%size]
		s := p.job.ctl.Slot(o)
		e := &s.Task
		front, back, batch := job.TaskUnpack(e.Claim.Load())
		if front >= back || s.State.Load() == job.StateDead {
			continue // nothing left to claim, or a dead owner
		}
		k := 1
		if batch {
			k = max((back-front)/(len(vs)+1), 1)
		}
		front, back, _ = job.TaskUnpack(e.Claim.Add(uint64(k) * job.TaskClaimBack))
		lo, hi := max(back, front), back+k
		if lo >= hi {
			continue // the last chunks went to others meanwhile
		}
		// Chunks [lo, hi) (the last unclaimed ones) are this PE's to
		// run, and the execution cannot end before they are done:
		// Handle and Fn, written before the execution was published,
		// are read from it.
		h, fn := int(e.Handle.Load()), e.Fn.Load()
		var t *task
		switch {
		case uint32(h) == job.TaskCopy && fn == job.TaskCopyFn:
			t = &p.task.copy // a shared copy (sharecopy.go)
		case h >= len(reg) || reg[h].fn == nil || reg[h].hash != fn:
			p.taskMismatch(o, h, reg)
		default:
			t = &reg[h]
		}
		p.runStolen(t, o, h, lo, hi)
		s.TaskDone.Add(uint64(hi - lo))
		wait.Ring(p.peers[o].door)
		p.task.stolen.Add(uint64(hi - lo))
		return true
	}
	return false
}

// taskMismatch panics for a chunk of owner o's task h that this PE
// claimed but has no (or another) body for.
//
//go:noinline
func (p *PE) taskMismatch(o, h int, reg []task) {
	body := "none"
	if h < len(reg) && reg[h].fn != nil {
		body = reg[h].name
	}
	panicf("Task.Execute: PE %d executes task %d, whose body on PE %d is %s: tasks must be created in the same order on every PE (NewTask is collective)", o, h, p.me, body)
}

// nearFirst returns the victims on NUMA node node first, in their
// order, then the others, and how many are near. A PE whose node is
// unknown (-1), or a PE itself on no known node, counts as near.
func nearFirst(victims []int, node int, nodeOf func(int) int) ([]int, int) {
	order := make([]int, 0, len(victims))
	for _, q := range victims {
		if m := nodeOf(q); node < 0 || m < 0 || m == node {
			order = append(order, q)
		}
	}
	near := len(order)
	for _, q := range victims {
		if m := nodeOf(q); !(node < 0 || m < 0 || m == node) {
			order = append(order, q)
		}
	}
	return order, near
}

// runStolen runs chunks [c, end) of owner o's task h on this PE. A
// panic in them becomes a *TaskPanicError that names them all (Chunk:
// c, the first).
func (p *PE) runStolen(t *task, o, h, c, end int) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(*JobError); ok {
				panic(r)
			}
			panic(&TaskPanicError{Thief: p.me, Owner: o, Task: h, Name: t.name, Chunk: c, Value: r, Stack: debug.Stack()})
		}
	}()
	t.fn(o, c, end)
}

// TaskPanicError is the panic value of a PE that panicked in a chunk of
// another PE's task: it fails the job like any PE's panic, naming the
// owner, the task and the chunk.
type TaskPanicError struct {
	Thief, Owner int
	Task         int    // the handle
	Name         string // the body's function
	Chunk        int
	Value        any    // what the chunk panicked with
	Stack        []byte // where
}

func (e *TaskPanicError) Error() string {
	return fmt.Sprintf("goshmem: chunk %d of task %d (%s) of PE %d, run by PE %d while it waited, panicked: %v",
		e.Chunk, e.Task, e.Name, e.Owner, e.Thief, e.Value)
}

// Unwrap returns the chunk's panic value if it is an error.
func (e *TaskPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
