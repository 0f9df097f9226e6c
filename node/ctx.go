package node

import (
	"runtime"
	"sync/atomic"
	"weak"

	"github.com/goshmem/goshmem/shm"
)

// CtxOptions are the options of CtxCreate (SHMEM_CTX_*).
type CtxOptions uint

const (
	// CtxSerialized: the context is used by one thread at a time.
	CtxSerialized CtxOptions = 1 << iota
	// CtxPrivate: the context is used only by the thread that created it.
	CtxPrivate
	// CtxNostore: Quiet and Fence on the context need not complete and
	// order the application's own memory stores (through Ptr or to
	// local memory) (SHMEM_CTX_NOSTORE). They still complete and order
	// the context's puts, AMOs and gets; here one locked instruction
	// does both, so the option changes nothing.
	CtxNostore

	// ctxDestroyed marks a destroyed context in opts (never returned by
	// Options).
	ctxDestroyed CtxOptions = 1 << 31
	// ctxHosts marks the contexts of a PE of a job across hosts (never
	// returned by Options): their Quiet also completes the operations on
	// other hosts, in quietSlow, so Quiet tests one word and inlines.
	ctxHosts CtxOptions = 1 << 30
)

// Ctx is a communication context (shmem_ctx_t): an independent stream
// of operations whose completion Quiet and ordering Fence govern without
// regard to other contexts. On mapped memory a context holds no lock
// and shares no writable word with any other context, so goroutines on
// different contexts never contend.
//
// A nil *Ctx is the invalid context (SHMEM_CTX_INVALID): a program may
// keep nil in a context variable to mean "no context" and compare with
// nil. As the specification says, Quiet, Fence and Destroy on it do
// nothing; PE returns nil and Options 0. Any RMA, AMO or signal on it
// is a programmer error and panics with a message naming the routine.
type Ctx struct {
	pe *PE
	// peers is the PE table RMA on this context indexes: the PE's own
	// for a world context, the team's members in team order for a team
	// context (so team-relative PE numbers cost nothing); world maps a
	// team PE number to the world's (nil: the identity).
	peers     []peer
	world     []int
	opts      CtxOptions // and ctxDestroyed
	team      any        // the API layer's team of a team context (see node/team.go)
	onDestroy func(*Ctx) // called once by Destroy (see SetTeam)
	isDefault bool
	// slow sends every operation through the checked slow path: set
	// when the context is destroyed and, under SHMEM_DEBUG, always.
	slow bool
	// x: which hosts the context wrote, for its Quiet (nil in a job on
	// one host; xhost.go).
	x *ctxHostsState
	// quietGate is the word Quiet's fast path tests: the job's abort
	// state (Header.Abort.State), so that a loop of puts and Quiets
	// that never waits stops when the job fails, as a wait does; or,
	// for a context whose Quiet always takes the slow path (destroyed,
	// or with writes on other hosts to complete), the PE's word that
	// is never 0 (PE.nonzero). One test keeps Quiet within the
	// inliner's budget.
	quietGate *atomic.Uint32
	_         [2*shm.CacheLine - 8 - 24 - 24 - 8 - 16 - 8 - 2 - 6 - 8 - 8]byte // the fields above take 112 bytes
	// fence is the word Quiet's full barrier is taken on; it is this
	// context's own line.
	fence atomic.Uint32
	_     [shm.CacheLine - 4]byte
}

// CtxCreate creates a context on the PE (shmem_ctx_create). It cannot
// fail on a node; the error is for the interface's sake (a transport
// with a bounded number of contexts returns one).
func (p *PE) CtxCreate(opts CtxOptions) (*Ctx, error) {
	return p.ctxCreate("CtxCreate", opts)
}

// ctxCreate is CtxCreate for routine (CtxCreate, TeamCreateCtx).
func (p *PE) ctxCreate(routine string, opts CtxOptions) (*Ctx, error) {
	if opts&^(CtxSerialized|CtxPrivate|CtxNostore) != 0 {
		panicf("%s: unknown option bits %#x; use CtxSerialized, CtxPrivate, CtxNostore", routine, uint(opts))
	}
	c := &Ctx{pe: p, peers: p.peers, opts: opts, slow: p.job.cfg.Debug, quietGate: &p.job.ctl.Header.Abort.State}
	if p.x != nil {
		c.opts |= ctxHosts
		c.quietGate = &p.nonzero
		c.x = p.job.x.newCtxHosts()
	}
	if opts&CtxPrivate == 0 {
		p.keepShareable(c)
	}
	return c, nil
}

// keepShareable records the shareable context c for Finalize, which
// destroys it if the program has not. The record is weak: a context the
// program drops without Destroy is collected as before, and its record
// goes with it.
func (p *PE) keepShareable(c *Ctx) {
	w := weak.Make(c)
	p.endMu.Lock()
	if p.shareable == nil {
		p.shareable = map[weak.Pointer[Ctx]]struct{}{}
	}
	p.shareable[w] = struct{}{}
	p.endMu.Unlock()
	runtime.AddCleanup(c, p.forgetShareable, w)
}

// forgetShareable drops the record of a shareable context: at its
// Destroy, or once it was collected.
func (p *PE) forgetShareable(w weak.Pointer[Ctx]) {
	p.endMu.Lock()
	delete(p.shareable, w)
	p.endMu.Unlock()
}

// CtxCreateTeam creates a context whose PE numbers are indices into
// members, a team's world PE numbers in team order
// (shmem_team_create_ctx).
func (p *PE) CtxCreateTeam(members []int, opts CtxOptions) (*Ctx, error) {
	c, err := p.ctxCreate("Team.CtxCreate", opts)
	if err != nil {
		return nil, err
	}
	c.world = append([]int(nil), members...)
	c.peers = make([]peer, len(members))
	for i, q := range members {
		c.peers[i] = p.peers[q]
	}
	return c, nil
}

// worldPE checks a PE number of the context and returns its world
// number.
func (c *Ctx) worldPE(routine string, pe int) int {
	if uint(pe) >= uint(len(c.peers)) {
		badPE(routine, pe, len(c.peers))
	}
	if c.world != nil {
		return c.world[pe]
	}
	return pe
}

// PE returns the PE the context belongs to; nil for the invalid (nil)
// context.
func (c *Ctx) PE() *PE {
	if c == nil {
		return nil
	}
	return c.pe
}

// Options returns the context's options; 0 for the invalid (nil)
// context.
func (c *Ctx) Options() CtxOptions {
	if c == nil {
		return 0
	}
	return c.opts &^ (ctxDestroyed | ctxHosts)
}

// Destroy completes the context's operations and destroys it
// (shmem_ctx_destroy). Using it afterwards panics. On the invalid (nil)
// context it does nothing.
func (c *Ctx) Destroy() {
	if c == nil {
		return
	}
	c.live("CtxDestroy")
	if c.isDefault {
		panicf("CtxDestroy: the default context cannot be destroyed")
	}
	c.Quiet()
	c.opts |= ctxDestroyed
	c.quietGate = &c.pe.nonzero
	c.slow = true
	if c.opts&CtxPrivate == 0 {
		c.pe.forgetShareable(weak.Make(c))
	}
	if f := c.onDestroy; f != nil {
		c.onDestroy = nil
		f(c)
	}
}

// live panics if c is nil (SHMEM_CTX_INVALID) or was destroyed.
func (c *Ctx) live(routine string) {
	if c == nil {
		nilCtx(routine)
	}
	if c.opts&ctxDestroyed != 0 {
		deadCtx(routine)
	}
	if c.isDefault && c.pe.finalized.Load() {
		// (Private contexts outlive Finalize, as the program is to
		// destroy them: TestFinalizeDestroysTeams.)
		afterFinalize(routine, c.pe.me)
	}
}

// afterFinalize panics: PE me called routine after its Finalize (the
// default context takes the slow path from then on, which asks).
//
//go:noinline
func afterFinalize(routine string, me int) {
	panicf("%s: PE %d has called Finalize; after it a PE may call no routine that communicates (OpenSHMEM leaves it undefined)", routine, me)
}

//go:noinline
func nilCtx(routine string) {
	panicf("%s: the context is nil (the invalid context, SHMEM_CTX_INVALID); use the PE's default context pe.Ctx() or one from CtxCreate", routine)
}

// quietSlow is Quiet where it has nothing to do - on a nil context
// (SHMEM_CTX_INVALID, as the specification says) - or must panic: on a
// destroyed one. (An argument would cost Quiet its
// inlining.)
//
// In a job across hosts it also completes the context's operations on
// other hosts (xhost.go).
//
//go:noinline
func (c *Ctx) quietSlow() {
	if c != nil && c.opts&ctxDestroyed == 0 {
		c.fence.Add(1)
		if c.pe.job.ctl.Header.Abort.State.Load() != 0 {
			c.pe.checkAbort("Quiet") // the job failed
		}
		if c.opts&ctxHosts != 0 {
			c.pe.xquiet(c) // its puts and AMOs on other hosts
		}
		return
	}
	c.noop("Quiet")
}

// noop panics if c was destroyed; a nil context passes (Quiet, Fence
// and Destroy do nothing on SHMEM_CTX_INVALID).
//
//go:noinline
func (c *Ctx) noop(routine string) {
	if c != nil && c.opts&ctxDestroyed != 0 {
		deadCtx(routine)
	}
}

//go:noinline
func deadCtx(routine string) {
	panicf("%s: the context was destroyed (CtxDestroy, or Finalize for a shareable context); create a new one with CtxCreate", routine)
}

// Quiet waits until every put, AMO and signal issued on the context is
// complete and visible to every PE (shmem_ctx_quiet). Operations on
// mapped memory are complete when they return; what is left is to make
// them visible before anything this thread does next, which one
// locked instruction on the context's own cache line does. On the
// invalid (nil) context it does nothing.
func (c *Ctx) Quiet() {
	if c != nil && c.quietGate.Load() == 0 {
		c.fence.Add(1)
		return
	}
	c.quietSlow() // also when the job has failed: it panics
}

// Fence orders the context's puts, AMOs and signals to each PE
// (shmem_ctx_fence). On amd64 (total store order) stores to memory are
// never reordered and the compiler keeps stores in program order, so
// there is nothing to do; elsewhere it is a full barrier. On the
// invalid (nil) context it does nothing.
func (c *Ctx) Fence() {
	if c == nil || c.opts&ctxDestroyed != 0 {
		c.noop("Fence")
		return
	}
	if runtime.GOARCH != "amd64" {
		c.fence.Add(1)
	}
	if c.opts&ctxHosts != 0 {
		// Across hosts a PE's frames to a host arrive and are applied
		// in order, but an RDMA WRITE could pass the frames before it:
		// counted, so that xfenced keeps it behind them.
		c.pe.x.fences.Add(1)
	}
}
