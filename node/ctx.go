package node

import (
	"runtime"
	"sync/atomic"

	"github.com/goshmem/goshmem/shm"
)

// CtxOptions are the options of CtxCreate (SHMEM_CTX_*).
type CtxOptions uint

const (
	// CtxSerialized: the context is used by one thread at a time.
	CtxSerialized CtxOptions = 1 << iota
	// CtxPrivate: the context is used only by the thread that created it.
	CtxPrivate
	// CtxNostore: the context is not used for stores (puts, AMOs); its
	// Quiet and Fence do nothing.
	CtxNostore
)

// Ctx is a communication context (shmem_ctx_t): an independent stream
// of operations whose completion Quiet and ordering Fence govern without
// regard to other contexts. On mapped memory a context holds no lock
// and shares no writable word with any other context, so goroutines on
// different contexts never contend.
type Ctx struct {
	pe *PE
	// peers is the PE table RMA on this context indexes: the PE's own
	// for a world context, the team's members in team order for a team
	// context (so team-relative PE numbers cost nothing); world maps a
	// team PE number to the world's (nil: the identity).
	peers     []peer
	world     []int
	opts      CtxOptions
	team      any // the API layer's team of a team context (see node/team.go)
	isDefault bool
	destroyed bool
	// slow sends every operation through the checked slow path: set
	// when the context is destroyed and, under SHMEM_DEBUG, always.
	slow bool
	_    [2*shm.CacheLine - 8 - 24 - 24 - 8 - 16 - 3]byte // the fields above take 83 bytes
	// fence is the word Quiet's full barrier is taken on; it is this
	// context's own line.
	fence atomic.Uint32
	_     [shm.CacheLine - 4]byte
}

// CtxCreate creates a context on the PE (shmem_ctx_create). It cannot
// fail on a node; the error is for the interface's sake (a transport
// with a bounded number of contexts returns one).
func (p *PE) CtxCreate(opts CtxOptions) (*Ctx, error) {
	if opts&^(CtxSerialized|CtxPrivate|CtxNostore) != 0 {
		panicf("CtxCreate: unknown option bits %#x; use CtxSerialized, CtxPrivate, CtxNostore", uint(opts))
	}
	return &Ctx{pe: p, peers: p.peers, opts: opts, slow: p.job.cfg.Debug}, nil
}

// CtxCreateTeam creates a context whose PE numbers are indices into
// members, a team's world PE numbers in team order
// (shmem_team_create_ctx).
func (p *PE) CtxCreateTeam(members []int, opts CtxOptions) (*Ctx, error) {
	c, err := p.CtxCreate(opts)
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

// PE returns the PE the context belongs to.
func (c *Ctx) PE() *PE { return c.pe }

// Options returns the context's options.
func (c *Ctx) Options() CtxOptions { return c.opts }

// Destroy completes the context's operations and destroys it
// (shmem_ctx_destroy). Using it afterwards panics.
func (c *Ctx) Destroy() {
	c.live("CtxDestroy")
	if c.isDefault {
		panicf("CtxDestroy: the default context cannot be destroyed")
	}
	c.Quiet()
	c.destroyed = true
	c.slow = true
}

// live panics if c was destroyed.
func (c *Ctx) live(routine string) {
	if c.destroyed {
		deadCtx(routine)
	}
}

//go:noinline
func deadCtx(routine string) {
	panicf("%s: the context was destroyed (CtxDestroy); create a new one with CtxCreate", routine)
}

// Quiet waits until every put, AMO and signal issued on the context is
// complete and visible to every PE (shmem_ctx_quiet). Operations on
// mapped memory are complete when they return; what is left is to make
// them visible before anything this thread does next, which one
// locked instruction on the context's own cache line does.
func (c *Ctx) Quiet() {
	if c.destroyed {
		deadCtx("Quiet")
	}
	if c.opts&CtxNostore == 0 {
		c.fence.Add(1)
	}
}

// Fence orders the context's puts, AMOs and signals to each PE
// (shmem_ctx_fence). On amd64 (total store order) stores to memory are
// never reordered and the compiler keeps stores in program order, so
// there is nothing to do; elsewhere it is a full barrier.
func (c *Ctx) Fence() {
	if c.destroyed {
		deadCtx("Fence")
	}
	if runtime.GOARCH != "amd64" && c.opts&CtxNostore == 0 {
		c.fence.Add(1)
	}
}
