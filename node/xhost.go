package node

// Across hosts. A job launched by srun or mpiexec may span hosts. The
// PEs of each host form one shared-memory domain exactly as under
// oshrun (their heaps mapped into each other's processes); every
// operation on a PE of another host goes through the two hosts' leader
// PEs (the lowest rank of each host), which alone hold connections
// (package internode, the backend SHMEM_INTERNODE names):
//
//	PE a (host A) --leader queue--> leader of A --transport--> leader of B --> PE b's heap
//
//   - A non-leader PE hands the operation to its leader through the
//     host's leader queue (internal/leaderq: a lock-free ring in the
//     host's "xhost" segment; one load of the queue's doorbell when the
//     leader is awake). The leader's progress goroutine drains the queue
//     and sends what it found, one write per peer for a batch. The
//     leader PE itself sends directly.
//   - The target host's leader applies each frame from its transport's
//     receiving goroutine: a put's payload is read from the socket
//     straight into the target heap (no staging copy), an AMO runs with
//     the target host's CPU atomics (so that it stays atomic with that
//     host's own loads, stores and atomics on the word), a barrier or
//     team word is stored, and the target PE's doorbell is rung, so a
//     PE waiting on a word written from another host wakes.
//   - Gets, fetching AMOs and Quiet are requests: the answer comes back
//     the same way to the requester's mailbox (a cache line and a data
//     window per PE in the xhost segment), and the requester waits on
//     the mailbox's sequence word with its usual wait (spin, yield,
//     sleep on its doorbell, which the applying leader rings).
//
// Ordering: a PE's frames to one host travel one path (its queue in
// FIFO order, or its leader's own sends; one ordered connection per
// pair of leaders; applied in order), so Fence has nothing to send
// across hosts, and Quiet is one round trip to every host written since
// the last Quiet: its answer follows the PE's earlier frames. An RDMA
// WRITE is the exception: the target's NIC places it on arrival, while
// the frames before it may still wait for the target leader's CPU. So
// Fence counts, and a put after a Fence to a host with frames not yet
// known applied goes as frames too (xfenced), or, from xFenceQuietMin
// up, waits for a Quiet round trip there first.
//
// Failure: a lost connection, or a host that reports its own failure
// (an xAbort frame: its abort record), sets this host's abort record and
// rings every doorbell, so every waiting PE stops with a *JobError; the
// leader forwards this host's own failures to every other host.

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/leaderq"
	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/pmi"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/internal/wait"
	"github.com/goshmem/goshmem/internode"
	"github.com/goshmem/goshmem/internode/backends"
	"github.com/goshmem/goshmem/shm"
)

// Frame operations (internode.Header.Op).
const (
	xPut      uint8 = 1 + iota // payload into PE's heap segment at Off
	xGet                       // Arg0 bytes from PE's heap segment at Off: xReply with them
	xAMO4                      // Flags: the Op; Arg0 v, Arg1 cmp; xReply with the old value
	xAMO8                      //
	xPost4                     // a non-fetching AMO (no reply)
	xPost8                     //
	xCtl                       // store uint32(Arg0) at Off of the control block, ring PE
	xQuiet                     // xReply (xCounted) once every earlier frame is applied
	xReply                     // to the local PE of index PE: Arg0, payload into its window
	xAbort                     // the sender's abort record: Arg0 kind, PE, Arg1 code
	xAbortAck                  // a GlobalExit's xAbort was heard and this leader's PMI is quiet
	xExit                      // after a GlobalExit: this host's processes may exit now

	// xPutFrom never leaves a host: a non-leader PE asks its leader to
	// put Arg1 bytes at offset Arg0 of the PE's own heap (index Ctx
	// among the host's PEs) to Off of PE's heap, with an RDMA WRITE from
	// the heap (which the leader maps and exposes), then to send the
	// header-only frame encoded in the payload (a flag or signal), and
	// to answer the PE's mailbox with Seq once the source is read.
	xPutFrom
	// xGetInto never leaves a host either: a non-leader PE asks its
	// leader to read Arg1 bytes at Off of PE's heap into offset Arg0 of
	// the PE's own heap with an RDMA READ, and to answer its mailbox
	// with Seq (Arg0 of the answer: 1) once they are there, or with 0
	// when the transport cannot (the PE then gets with frames).
	xGetInto
	// xIPut: the payload is whole elements of Arg1 bytes, packed, for
	// PE's heap segment at Off, Off+Arg0, Off+2*Arg0, ... (IPut, and
	// strided collectives: one frame for many elements).
	xIPut
	// xIGet: Arg1&0xffffffff elements of Arg1>>32 bytes from PE's heap
	// segment at Off, Off+Arg0, ...: xReply with them packed.
	xIGet
	// xFinal, to the leader PE of another host: PE Arg1 of the sender's
	// host entered Finalize and will have made Arg0 barriers of the
	// whole job when its Finalize's barrier completes (xpublishFinal).
	xFinal
	// xTeamFinal: PE Arg1 of the sender's host entered Finalize after
	// Arg0 collective calls on a team of which PE is a member; the
	// receiving leader keeps the least such count in the 8-byte word at
	// Off of PE's heap segment, in PE's slot of the team
	// (TeamFinalAcross).
	xTeamFinal
)

// xPutFlag, in an xPut's Flags: once the payload is in the heap, store
// uint32(Arg0) at offset Arg1 of the same PE's segment (a 4-byte
// aligned word) with one atomic store, then ring the PE: data and the
// flag saying it is there in one frame.
const xPutFlag uint8 = 1

// xCounted, in the Flags of an xReply (every answer to an xQuiet): the
// answer adds one to the mailbox's Acks instead of storing its Seq (a
// Quiet waits for several answers at once, which come in any order).
const xCounted uint8 = 1

// xPutSigSet and xPutSigAdd, in an xPut's Flags: once the payload is
// in the heap, set or add Arg0 to the 8-byte signal word at offset
// Arg1 of the same PE's segment with a CPU atomic of the target host,
// then ring the PE: PutSignal in one frame (the last of a split put).
const (
	xPutSigSet uint8 = 2
	xPutSigAdd uint8 = 4
)

// Sizes of the xhost segment.
const (
	xqSlots   = 256
	xqMsg     = 4096 - 16 // a slot of 4 KiB
	xWindow   = 64 << 10  // a PE's reply window: gets move in pieces of this
	xArena    = 1 << 20   // the progress goroutine's batch buffer
	xPEArena  = 64 << 10  // the waiting leader PE's batch buffer
	xMaxFrame = 1 << 30   // the largest payload a leader sends in one frame
	// xFenceQuietMin is the smallest put that, when a Fence orders
	// frames not yet known applied before it, waits for a Quiet round
	// trip to go as an RDMA WRITE; a smaller one goes as frames
	// (xfenced). (An estimate, not measured: a round trip on a NIC
	// costs about what copying some tens of KiB through frames does.)
	xFenceQuietMin = 256 << 10
	// xRDMAMin is SHMEM_INTERNODE_RDMA_MIN's default: a put of this
	// many bytes or more from a leader's process goes as an RDMA WRITE
	// (internode.RemoteMemory) and a frame after it; a smaller one as
	// one frame (an RDMA WRITE and a frame are two messages where a
	// frame with its payload is one).
	xRDMAMin = 8 << 10
	// xStackMax is the largest buffer a goroutine stack may hold (the
	// compiler's limit for a variable on the stack is 128 KiB): payloads
	// of up to this size that lie outside the heap mappings are staged
	// (see xpe.stage).
	xStackMax = 128 << 10
)

// mailbox is a PE's answer line in the xhost segment; its window
// follows it.
type mailbox struct {
	Seq atomic.Uint32 // the last answered request
	// Acks counts answered Quiet round trips (xCounted answers):
	// a Quiet asks every host it must at once and waits for as many
	// answers, which may come in any order.
	Acks atomic.Uint32
	Val  atomic.Uint64 // its value (an AMO's old value)
	_    [shm.CacheLine - 16]byte
}

const boxStride = shm.CacheLine + xWindow

// xhostSize is the size of the xhost segment of a host of n PEs: the
// leader queue, a cache line of flags (xflags), the mailboxes.
func xhostSize(n int) int64 {
	return int64(xqBytes()) + shm.CacheLine + int64(n)*boxStride
}

// xflags is what the leader tells its host's PEs.
type xflags struct {
	// RDMA is 1 once the leader has exposed the host's heaps to a
	// transport with RemoteMemory: xPutFrom can be asked for.
	RDMA atomic.Uint32
	_    [shm.CacheLine - 4]byte
}

// xhost is a process's part of a job that spans hosts.
type xhost struct {
	j      *Job
	cl     *Cluster
	host   int          // this host
	hostOf []int32      // host of every PE
	local  []int        // this host's PEs, ascending
	idx    []int32      // per PE: its index among its host's PEs
	leader bool         // this process hosts this host's leader PE
	emul   atomic.Int32 // xsink.emulated's answer once known: 1 no, 2 yes
	name   string       // the backend
	tr     internode.Transport
	// trSet is closed once tr is set: the Sink may get frames (and
	// answer them) before the backend's Open has returned.
	trSet chan struct{}
	// polls: the leader PE's waits call pollWait (SHMEM_INTERNODE_POLL);
	// poller is tr's Poll capability, if it has one.
	polls  bool
	poller internode.Poller
	// netSeq counts the times this process sent frames to another
	// host or a poll of its waits delivered some (netEvent): within
	// about netActive of one the waits read the sockets at every yield,
	// later at every netIdleEvery-th (talking). netSeen is netSeq at
	// talking's last look, netQuiet when a look found it unchanged
	// since the one before (unix ns, taken every netLookEvery looks; 0:
	// not yet timed; -1: quiet for netActive already). So a clock is
	// read only in the netActive after traffic stops, and then only at
	// every netLookEvery-th look, not per frame or per poll: a clock read is
	// a system call where the clock source is not the TSC (the soft-RoCE
	// guest's HPET).
	netSeq, netSeen atomic.Uint64
	netQuiet        atomic.Int64
	netLooks        atomic.Uint32 // talking's looks (see there)
	// deferrer is tr's Defer capability (with polls only: what it
	// holds back is written at the latest when the transport's
	// receiver next looks, which it does while a PE polls).
	deferrer internode.Deferrer
	// rm is tr's one-sided access (RDMA WRITE and READ into the heaps
	// the leaders expose), unless SHMEM_INTERNODE_RDMA=0.
	rm      internode.RemoteMemory
	rdmaMin int     // the smallest put that goes as an RDMA WRITE
	flags   *xflags // in the xhost segment
	// win is the address range the heaps are mapped into: a payload
	// inside it is not on a goroutine stack.
	win mem.Region
	// consume is the leader queue's consumer role: the progress
	// goroutine's, or the waiting leader PE's (peBuf, peTouched).
	consume   sync.Mutex
	peBuf     []byte
	peTouched []bool
	// batch holds, per host, the frames of the drain in progress
	// (x.consume): one SendBatch each, one write where the connection
	// is idle.
	batch   [][]internode.Frame
	seg     *shm.Mapping
	q       *leaderq.Queue
	boxes   mem.Base // the mailboxes
	stop    atomic.Bool
	done    chan struct{}
	closing atomic.Bool // Finalize is closing the transport: losses are no failures
	fwd     atomic.Bool // this host's failure went to the others (or came from them)
	heard   atomic.Bool // the failure came from another host
	fwdOnce sync.Once
	fwdDone chan struct{} // closed once fwd is settled: sent (or timed out), or heard
	acks    chan int      // hosts that acknowledged this host's GlobalExit
	pmiOnce sync.Once
	pmiHeld bool // quiescePMI holds the exchange: no PMI request in flight
	exch    *lockedExchange
}

// xpe is a PE's state for operations on other hosts. Its mutex
// serializes the PE's cross-host requests (goroutines of one PE share
// its mailbox); the on-host data path never takes it.
type xpe struct {
	mu     sync.Mutex
	seq    uint32
	idx    uint16
	box    *mailbox
	window []byte
	msg    []byte // a leader queue message being built
	// sent counts, per host, this PE's writes there (puts, posted
	// AMOs, signals, on any context); done is what sent was when this
	// PE's last Quiet round trip to that host was answered: every
	// write before it had then been applied (each PE's frames to a
	// host arrive in order). A context's Quiet goes to the hosts that
	// context wrote after done (xquiet).
	sent, done []uint64
	quiets     uint64 // Quiet round trips (tests)
	quietWaits uint64 // Quiets that waited for answers (tests)
	quietTo    []int32
	// held: the transport holds a frame of this PE back (Deferrer);
	// the PE's next wait writes it.
	held atomic.Bool
	// framed: hosts this PE sent a frame to since its last Quiet that
	// the target's CPU applies to memory (a put, an AMO, a flag): an
	// RDMA READ there could pass it, so gets to them go as frames.
	// framedAt[h] is fences when framed[h] was set: a Fence since
	// then orders those frames before what follows, which an RDMA
	// WRITE to h could pass (the target's NIC places it at once, the
	// frames wait for the target leader's CPU), so until the next
	// Quiet there puts to h go as frames, or wait for a Quiet round
	// trip (xfenced).
	framed   []bool
	framedAt []uint64
	// fences counts the PE's Fence calls on any context (Ctx.Fence).
	fences atomic.Uint64
	// stage holds a leader-process PE's payload while the transport
	// may read it from another goroutine (the leader queue's message
	// buffer is unused in the leader's process). The core hides its
	// payloads from escape analysis, so one may be on the caller's
	// stack, and a stack moves when it grows or the GC shrinks it: a
	// pointer the transport keeps after Send returns could then read
	// freed memory. Payloads in the heap mappings, and larger ones (no
	// stack holds them), are sent from where they are.
	stage []byte
}

// lockedExchange makes the PMI client safe for the transport's
// goroutines and the PE's own calls.
type lockedExchange struct {
	mu sync.Mutex
	c  *pmi.Client
}

func (e *lockedExchange) Put(k string, v []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c.Put(k, v)
}

func (e *lockedExchange) Fence() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c.Fence()
}

func (e *lockedExchange) Get(r int, k string) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c.Get(r, k)
}

// newXhost describes the hosts of cl for this process (rank) and maps
// its host's xhost segment.
func newXhost(j *Job, cl *Cluster, rank int, seg *shm.Segment) (*xhost, error) {
	x := &xhost{j: j, cl: cl, host: cl.HostOf[rank], name: j.cfg.Internode, done: make(chan struct{}),
		fwdDone: make(chan struct{}), acks: make(chan int, len(cl.Hosts)), trSet: make(chan struct{})}
	if x.name == "" {
		x.name = backends.Default
	}
	x.hostOf = make([]int32, len(cl.HostOf))
	x.idx = make([]int32, len(cl.HostOf))
	count := make([]int32, len(cl.Hosts))
	for q, h := range cl.HostOf {
		x.hostOf[q] = int32(h)
		x.idx[q] = count[h]
		count[h]++
		if h == x.host {
			x.local = append(x.local, q)
		}
	}
	x.leader = cl.Leaders[x.host] == rank
	if x.leader {
		// The leader writes and reads every heap of its host for the
		// other hosts (xsink), through its own mapping of each.
		for _, q := range x.local {
			if x.j.serve[q] == nil {
				return nil, fmt.Errorf("goshmem: PE %d (host %s's leader) cannot map the symmetric heap of PE %d on its host: %v; "+
					"a leader must map every heap of its host to serve the other hosts' puts, gets and atomics (the heaps are memfd segments: check the memory and mapping limits, e.g. ulimit -v and vm.max_map_count)",
					rank, cl.Hosts[x.host], q, x.j.serveErr[q])
			}
		}
	}
	if seg.Size() < xhostSize(len(x.local)) {
		return nil, fmt.Errorf("goshmem: the host's cross-host segment has %d bytes, want %d", seg.Size(), xhostSize(len(x.local)))
	}
	m, err := seg.Map(0, 0)
	if err != nil {
		return nil, err
	}
	x.seg = m
	b := m.Bytes()
	qb := xqBytes()
	if x.q, err = leaderq.Open(b[:qb]); err != nil {
		m.Close()
		return nil, err
	}
	x.flags = mem.At[xflags](mem.RegionOf(b[qb:]).Base, 0)
	x.boxes = mem.RegionOf(b[qb+shm.CacheLine:]).Base
	x.win = mem.RegionOf(j.window)
	x.rdmaMin = xRDMAMin
	if m := j.cfg.InternodeRDMAMin; m > 0 {
		x.rdmaMin = int(m)
	}
	return x, nil
}

// initXhost lays out a new xhost segment (the leader, before it hands
// the segment to its host-mates).
func initXhost(seg *shm.Segment) error {
	m, err := seg.Map(0, 0)
	if err != nil {
		return err
	}
	defer m.Close()
	_, err = leaderq.Init(m.Bytes()[:xqBytes()], xqSlots, xqMsg)
	return err
}

func xqBytes() int { return (leaderq.Size(xqSlots, xqMsg) + shm.CacheLine - 1) &^ (shm.CacheLine - 1) }

// remote reports whether PE pe is on another host.
func (x *xhost) remote(pe int) bool { return int(x.hostOf[pe]) != x.host }

func (x *xhost) box(i int) *mailbox { return mem.At[mailbox](x.boxes, uintptr(i)*boxStride) }

func (x *xhost) window(i int) []byte {
	return mem.ByteSlice(x.boxes, uintptr(i)*boxStride+shm.CacheLine, xWindow)
}

// newXpe prepares PE me's cross-host state.
func (x *xhost) newXpe(me int) *xpe {
	i := int(x.idx[me])
	return &xpe{idx: uint16(i), box: x.box(i), window: x.window(i),
		msg: make([]byte, x.q.Max()), sent: make([]uint64, len(x.cl.Hosts)), done: make([]uint64, len(x.cl.Hosts)),
		framed: make([]bool, len(x.cl.Hosts)), framedAt: make([]uint64, len(x.cl.Hosts)),
		quietTo: make([]int32, 0, len(x.cl.Hosts))}
}

// leaderProcs is the GOMAXPROCS of a leader's process (unless the user
// set GOMAXPROCS). A goroutine asleep in a futex system call keeps its
// P until the runtime's monitor takes it back, 20 us to 10 ms later
// (see watcherP): the exit watcher, the progress goroutine and the PE
// itself may all sleep so, and the transport's receiving goroutine,
// woken by the network poller, must still find a P at once, or every
// answer from another host waits for the monitor. With 3 Ps a put
// ping-pong between two 1-PE hosts of this 2-CPU machine took 150 us
// (and moved with SHMEM_WAIT_SLEEP); see docs/performance.md.
const leaderProcs = 4

// open starts the leader's transport and progress goroutine (the leader
// process), and meets every process of the job in the PMI fence that
// publishes the leaders' addresses. The Sink is ready before: frames
// may come as soon as the fence is over.
func (x *xhost) open(pc *pmi.Client) error {
	x.exch = &lockedExchange{c: pc}
	if !x.leader {
		if err := pc.Fence(); err != nil {
			return fmt.Errorf("goshmem: PMI fence after the leaders' addresses: %w", err)
		}
		return nil
	}
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < leaderProcs {
		if prev := runtime.GOMAXPROCS(leaderProcs); x.j.prevProcs == 0 {
			x.j.prevProcs = prev
		}
	}
	ranks := x.cl.Leaders
	iface := x.j.cfg.InternodeIface
	if iface == "auto" {
		iface = ""
	}
	tr, err := backends.Open(x.name, internode.Config{
		Index: x.host, Leaders: len(x.cl.Hosts), JobID: pc.JobID(), Ranks: ranks,
		Exchange: x.exch, Sink: (*xsink)(x), Iface: iface,
	})
	if err != nil {
		return fmt.Errorf("goshmem: PE %d (host %s's leader): opening the transport between hosts (SHMEM_INTERNODE=%s): %w",
			x.cl.Leaders[x.host], x.cl.Hosts[x.host], x.name, err)
	}
	x.tr = tr
	if d, ok := tr.(fmt.Stringer); ok { // what the backend chose, for SHMEM_INFO
		x.cl.Transport = d.String()
	}
	close(x.trSet)
	if rm, ok := tr.(internode.RemoteMemory); ok && !x.j.cfg.InternodeNoRDMA {
		if err := x.expose(rm); err != nil {
			return err
		}
	}
	if !x.j.cfg.InternodeNoPoll {
		x.poller, _ = tr.(internode.Poller)
		if !x.j.cfg.InternodeNoHold {
			x.deferrer, _ = tr.(internode.Deferrer)
		}
		x.peBuf, x.peTouched = make([]byte, xPEArena), make([]bool, len(x.cl.Hosts))
		x.polls = true
	}
	x.batch = make([][]internode.Frame, len(x.cl.Hosts))
	go x.progress()
	return nil
}

// expose registers the heap of every PE of this host with the
// transport (RemoteMemory), under its PE number, so that the other
// hosts' leaders write and read them with RDMA.
func (x *xhost) expose(rm internode.RemoteMemory) error {
	size := x.j.heapSize + job.PoolBytes
	for _, q := range x.local {
		h := mem.ByteSlice(x.j.serve[q], 0, int(size)) // (mapped: newXhost checked)
		if err := rm.Expose(uint32(q), h); err != nil {
			return fmt.Errorf("goshmem: PE %d (host %s's leader): exposing PE %d's heap (%d bytes) for RDMA: %w; or turn RDMA off with SHMEM_INTERNODE_RDMA=0",
				x.cl.Leaders[x.host], x.cl.Hosts[x.host], q, size, err)
		}
	}
	x.rm = rm
	x.flags.RDMA.Store(1)
	return nil
}

// progress is the leader's progress goroutine: it drains the leader
// queue, sends each message to its target's host (the messages found
// together as one batch: Flush once per peer before the buffer is
// reused), and forwards this host's failure to the other hosts. When
// the queue stays empty it sleeps on the queue's doorbell.
func (x *xhost) progress() {
	defer close(x.done)
	buf := make([]byte, xArena)
	pol := wait.Policy{Spin: 64, Yield: 16, MinSleep: 50 * time.Microsecond, MaxSleep: 100 * time.Millisecond, Mode: x.j.policy.Mode}
	abort := &x.j.ctl.Header.Abort.State
	stop := func() bool { return x.stop.Load() || abort.Load() != 0 && !x.fwd.Load() }
	touched := make([]bool, len(x.cl.Hosts))
	for {
		if !x.q.Wait(&pol, stop) {
			if x.stop.Load() {
				return
			}
			x.forwardAbort()
			continue
		}
		x.consume.Lock()
		x.drain(buf, touched)
		x.consume.Unlock()
	}
}

// drain sends what the leader queue holds, up to buf's size (a batch:
// the messages found together go out with one SendBatch per peer), and
// flushes every peer it wrote to before buf is reused. The caller holds
// x.consume: the progress goroutine, or the leader PE in a wait
// (pollWait).
func (x *xhost) drain(buf []byte, touched []bool) {
	max := x.q.Max()
	for off := 0; off+max <= len(buf); {
		n, ok := x.q.TryPop(buf[off : off+max])
		if !ok {
			break
		}
		x.sendQueued(buf[off:off+n], touched)
		off += n
	}
	x.sendBatches()
	sent := false
	for h, t := range touched {
		if t {
			x.tr.Flush(h) // an error: Failed has been told
			touched[h] = false
			sent = true
		}
	}
	if sent {
		x.netEvent() // answers may come (talking)
	}
}

// pollWait is what a waiting leader PE does for its host's traffic
// between the checks of its condition: it reads its connections
// (internode.Poller), and it sends what its host's PEs queued if the
// progress goroutine is not at it (asleep, or not yet woken), so that
// neither direction waits for a goroutine to be woken. It reports
// whether it delivered or sent anything.
func (x *xhost) pollWait(net bool) bool {
	got := net && x.poller != nil && x.poller.Poll()
	if x.q.Ready() && x.consume.TryLock() {
		if x.q.Ready() {
			x.drain(x.peBuf, x.peTouched)
			got = true
		}
		x.consume.Unlock()
	}
	if got {
		x.netEvent()
	}
	return got
}

// Reading the sockets from a wait costs a system call (about half a
// microsecond), more than a whole hand-off between PEs of the host: an
// on-host ping-pong whose waits reached their yields took 0.09-0.32 us
// with every yield polling and 0.06-0.14 us without polls, in a job
// with an idle second host (5 adjacent runs; 0.055-0.074 in a job of
// one host). So a wait reads them at every yield, and every 8 spins,
// only while this process talks to other hosts (it sent a frame, or a
// poll delivered one, in the last netActive: talking); otherwise at
// every netIdleEvery-th yield and every 64 spins. The first frame after
// a quiet period then waits for up to that many yields (a few
// microseconds); while frames flow, a spinning leader sees one within
// 8 spins and a read: between two 1-PE hosts with the spin policy
// (SHMEM_WAIT_SPIN=32000, what a host with a CPU to spare gets), every
// 8 spins against every 64 gave the barrier 0.75-0.85 of its time
// (median 0.80, 5 adjacent runs of an experimental build), the put
// ping-pong 0.84-1.07 (0.94); see docs/design.md for the build as it is.
// Draining the leader queue (a load when it is empty) stays at every
// yield.
const (
	netActive    = time.Millisecond
	netIdleEvery = 8
	netLookEvery = 256
)

// netEvent records that this process sent frames to another host, or
// that a poll delivered some (see talking).
func (x *xhost) netEvent() { x.netSeq.Add(1) }

// talking reports whether this process sent or got a frame from
// another host since talking's last look, or in about the last
// netActive (see netSeq). Its looks race with each other (PEs of one
// process): a lost update costs at most one look's answer.
func (x *xhost) talking() bool {
	if s := x.netSeq.Load(); s != x.netSeen.Load() {
		x.netSeen.Store(s)
		x.netQuiet.Store(0)
		return true
	}
	q := x.netQuiet.Load()
	if q < 0 {
		return false
	}
	// Quiet since the last look: the clock is read at every
	// netLookEvery-th look only (a wait looks every 64 spins and at
	// every yield), so a wait that ends within that many looks reads
	// none.
	if x.netLooks.Add(1)%netLookEvery != 0 {
		return true
	}
	now := time.Now().UnixNano()
	switch {
	case q == 0:
		x.netQuiet.Store(now)
	case now-q >= int64(netActive):
		x.netQuiet.Store(-1)
		return false
	}
	return true
}

// kick writes the frames the transport holds back (Deferrer), before a
// wait of a PE that had some held.
//
//go:noinline
func (x *xhost) kick() {
	if x.deferrer != nil {
		x.netEvent()
		x.deferrer.Kick()
	}
}

// pollIdle tells the transport that the leader PE stops polling (it
// goes to sleep in its wait).
func (x *xhost) pollIdle() {
	if x.poller != nil {
		x.poller.PollIdle()
	}
}

// sendQueued sends one message of the leader queue.
func (x *xhost) sendQueued(msg []byte, touched []bool) {
	var h internode.Header
	h.Decode(msg)
	if uint(h.PE) >= uint(len(x.hostOf)) {
		return // cannot happen: the PE checked it
	}
	host := int(x.hostOf[h.PE])
	switch h.Op {
	case xPutFrom:
		x.sendBatches() // (the frames queued before it go first)
		x.putFrom(&h, msg[internode.HeaderSize:])
		return
	case xGetInto:
		x.sendBatches()
		x.getInto(&h)
		return
	}
	x.batch[host] = append(x.batch[host], internode.Frame{Header: h, Payload: msg[internode.HeaderSize:]})
	touched[host] = true
}

// sendBatches hands each host's frames of the drain in progress to the
// transport at once (SendBatch: one write where the connection is
// idle, where a Send each wrote each). The payloads stay in the drain's
// buffer, which drain flushes before it is reused.
func (x *xhost) sendBatches() {
	for h, b := range x.batch {
		if len(b) > 0 {
			x.tr.SendBatch(h, b) // an error: Failed has been told
			clear(b)
			x.batch[h] = b[:0]
		}
	}
}

// putFrom does what a non-leader PE's xPutFrom asks (see xPutFrom): an
// RDMA WRITE from the PE's heap, or frames from it when the target's
// region is not announced yet; then the frame it carries; then,
// once the source has been read, the answer to the PE.
func (x *xhost) putFrom(h *internode.Header, rest []byte) {
	if int(h.Ctx) >= len(x.local) || len(rest) < internode.HeaderSize || x.rm == nil ||
		h.Arg0 > uint64(x.j.heapSize) || h.Arg1 > uint64(x.j.heapSize)-h.Arg0 {
		return // cannot happen: the PE checked it
	}
	src := x.local[h.Ctx]
	data := mem.ByteSlice(x.j.serve[src], uintptr(h.Arg0), int(h.Arg1))
	var notify internode.Header
	notify.Decode(rest)
	notify.Op, notify.PE, notify.Off, notify.Ctx, notify.Len = xPut, h.PE, h.Off, h.Ctx, 0
	host := int(x.hostOf[h.PE])
	ok, err := x.rm.Write(host, h.PE, h.Off, data)
	for off := 0; err == nil && !ok && off < len(data); off += xMaxFrame { // not announced: frames from the mapped heap
		n := min(len(data)-off, xMaxFrame)
		f := internode.Header{Op: xPut, PE: h.PE, Off: h.Off + uint64(off), Ctx: h.Ctx, Len: uint32(n)}
		err = x.tr.Send(host, &f, data[off:off+n])
	}
	if err == nil {
		err = x.tr.Send(host, &notify, nil)
	}
	if err == nil {
		x.tr.Flush(host) // the source is read (an error: Failed has been told, and the job fails)
	}
	box := x.box(int(h.Ctx))
	box.Seq.Store(h.Seq)
	wait.Ring(x.j.bell(src))
}

// getInto does what a non-leader PE's xGetInto asks: an RDMA READ
// into the PE's heap, then the answer (see xGetInto).
func (x *xhost) getInto(h *internode.Header) {
	if int(h.Ctx) >= len(x.local) || x.rm == nil || h.Arg0 > uint64(x.j.heapSize) || h.Arg1 > uint64(x.j.heapSize)-h.Arg0 {
		return // cannot happen: the PE checked it
	}
	dst := x.local[h.Ctx]
	ok, err := x.rm.Read(int(x.hostOf[h.PE]), h.PE, h.Off, mem.ByteSlice(x.j.serve[dst], uintptr(h.Arg0), int(h.Arg1)))
	// An error: Failed has been told; the PE's frames then stop it with
	// the job's failure.
	box := x.box(int(h.Ctx))
	var done uint64
	if ok && err == nil {
		done = 1
	}
	box.Val.Store(done)
	box.Seq.Store(h.Seq)
	wait.Ring(x.j.bell(dst))
}

// forwardAbort sends this host's abort record to every other host's
// leader, once, and returns when that is done (at most forwardWait
// later; a caller that comes second waits for the first). For a
// GlobalExit it also waits, within the same bound, until every other
// leader has acknowledged it (see beforeExit).
func (x *xhost) forwardAbort() {
	if x.tr == nil {
		return
	}
	if !x.fwd.CompareAndSwap(false, true) {
		select {
		case <-x.fwdDone:
		case <-time.After(forwardWait):
		}
		return
	}
	defer x.fwdOnce.Do(func() { close(x.fwdDone) })
	kind, pe, _, code, ok := x.j.ctl.Header.Abort.Settled()
	if !ok {
		return
	}
	h := internode.Header{Op: xAbort, PE: uint32(pe), Arg0: uint64(kind), Arg1: uint64(int64(code))}
	deadline := time.After(forwardWait)
	if !x.eachHost(h, deadline) || kind != job.AbortGlobalExit {
		return
	}
	acked := make([]bool, len(x.cl.Hosts))
	for n := len(x.cl.Hosts) - 1; n > 0; {
		select {
		case h := <-x.acks:
			if !acked[h] {
				acked[h] = true
				n--
			}
		case <-deadline:
			return
		}
	}
}

// forwardWait bounds how long a leader waits to tell the other hosts of
// its host's failure (and, for a GlobalExit, for their answers): a host
// that does not answer in time is gone or going.
const forwardWait = time.Second

// eachHost sends h to every other host's leader (with Flush), in a
// goroutine, and reports whether that was done before deadline fired.
func (x *xhost) eachHost(h internode.Header, deadline <-chan time.Time) bool {
	done := make(chan struct{})
	go func() {
		for host := range x.cl.Hosts {
			if host != x.host {
				hh := h
				if x.tr.Reply(host, &hh, nil) == nil {
					x.tr.Flush(host)
				}
			}
		}
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-deadline:
		return false
	}
}

// beforeExit returns when this process may exit for a GlobalExit of a
// job that spans hosts.
//
// Why it waits: a cluster launcher that sees one process exit with a
// non-zero status kills the job's other processes, and MPICH's hydra
// fails itself (status 255, or mpiexec killed by SIGPIPE) when one of
// them is killed while the launcher answers a request of it: a leader
// may be fetching another leader's address (the transport connects on
// first use) at that moment. So no process of the job exits before
// every leader's PMI is quiet:
//
//  1. the leader of the exiting host sends its abort record to every
//     other leader and waits for their xAbortAck, which each sends once
//     it has no PMI request in flight and will start none (quiescePMI);
//  2. it quiets its own PMI, sends xExit to every other leader, and lets
//     its host's processes go (Abort.Exit);
//  3. a leader that receives xExit lets its host's processes go.
//
// Every step is bounded (forwardWait, exitWait): a host that died does
// not keep the others from exiting.
func (x *xhost) beforeExit() {
	a := &x.j.ctl.Header.Abort
	if x.leader {
		if !x.heard.Load() {
			x.forwardAbort()
			x.quiescePMI()
			if x.tr != nil {
				x.eachHost(internode.Header{Op: xExit}, time.After(forwardWait))
			}
			x.letExit()
			return
		}
	}
	deadline := time.Now().Add(exitWait)
	for a.Exit.Load() == 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		sys.FutexWait(mem.U32(&a.Exit), 0, left)
	}
}

// exitWait bounds how long a process waits for its leader's word to exit
// after a GlobalExit (two forwardWaits and some).
const exitWait = 3 * time.Second

// letExit lets this host's processes exit (beforeExit).
func (x *xhost) letExit() {
	a := &x.j.ctl.Header.Abort
	a.Exit.Store(1)
	sys.FutexWake(mem.U32(&a.Exit), 1<<30)
}

// quiescePMI returns once the leader has no PMI request in flight, and
// keeps the exchange locked so that none starts (bounded by
// forwardWait: a launcher that does not answer is not waited for).
func (x *xhost) quiescePMI() {
	x.pmiOnce.Do(func() {
		if x.exch == nil {
			return
		}
		deadline := time.Now().Add(forwardWait)
		for !x.exch.mu.TryLock() {
			if time.Now().After(deadline) {
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
		x.pmiHeld = true
	})
}

// close ends the cross-host part at Finalize: the leader waits until
// every PE of its host has finalized (their last frames pass through
// it), then stops the progress goroutine and closes the transport with
// a goodbye.
//
// It does not rely on the ring watcher to notice a host-mate that dies
// meanwhile (past the Finalize barrier, nothing else waits for it): every
// closeCheckEvery polls it checks that the mate's process is alive
// (checkPeer, a few system calls), and a dead one fails the job. On a
// failure, recorded here or by anyone, the leader's Finalize panics with
// the *JobError naming it (Main returns it); the job's close then
// forwards it and aborts the transport.
func (x *xhost) close(p *PE) {
	if !x.leader {
		return
	}
	for _, q := range x.local {
		s := x.j.ctl.Slot(q)
		for n := 1; s.State.Load() != job.StateFinalized; n++ {
			if n%closeCheckEvery == 0 {
				x.j.checkPeer(q)
			}
			if x.j.ctl.Header.Abort.State.Load() != 0 {
				p.checkAbort("Finalize")
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	x.shutdown()
}

// closeCheckEvery is how many of close's polls (200 us sleeps each)
// pass between two checks of a host-mate's process: a death there is
// seen within about 20 ms.
const closeCheckEvery = 64

// shutdown stops the progress goroutine and closes the transport (once;
// Finalize's close and the job's close both call it).
func (x *xhost) shutdown() {
	if !x.leader || x.tr == nil || !x.closing.CompareAndSwap(false, true) {
		return
	}
	// (A GlobalExit ends the job through its own exit protocol, which
	// beforeExit runs and which a lost connection would cut short.)
	kind, pe, pid, code, failed := x.j.ctl.Header.Abort.Settled()
	failed = failed && kind != job.AbortGlobalExit
	if failed && !x.heard.Load() {
		// This host's failure ends its processes: the other hosts must
		// hear of it before this leader's connections go. The progress
		// goroutine may not have forwarded it yet (stop makes it return
		// without), and with no frame exchanged so far there is no
		// connection whose loss would tell them: forwardAbort dials.
		x.forwardAbort()
	}
	x.stop.Store(true)
	x.q.Wake()
	<-x.done
	if failed {
		// Not Close: its goodbye would tell the other hosts that this
		// one ended cleanly, and they would wait on.
		x.tr.Abort(job.Describe(kind, pe, pid, code))
		return
	}
	x.tr.Close()
}

// xsink is the leader's internode.Sink: it applies what other hosts'
// leaders send.
type xsink xhost

// target returns PE pe's heap segment as mapped here when pe is a PE of
// this host and [off, off+n) lies in its heap segment.
func (x *xsink) target(pe uint32, off uint64, n uint64) (mem.Base, bool) {
	if uint(pe) >= uint(len(x.hostOf)) || int(x.hostOf[pe]) != x.host {
		return nil, false
	}
	b := x.j.serve[pe]
	size := uint64(x.j.heapSize) + job.PoolBytes
	if b == nil || off > size || n > size-off {
		return nil, false
	}
	return b, true
}

// emulated reports whether this host's PEs emulate AMOs under the
// targets' locks (Job.amoLocked: some PE of the host reaches another
// through CMA). The sink reads the slots itself, since a frame may
// come before this process's PEs have looked (Job.afterStart): every
// slot of the host is filled before its PE enters the start-up
// barrier, and another host's PE sends nothing before it has left it.
func (x *xsink) emulated() bool {
	switch x.emul.Load() {
	case 1:
		return false
	case 2:
		return true
	}
	v := int32(1)
	if x.j.someUnmapped() {
		v = 2
	}
	x.emul.Store(v)
	return v == 2
}

// lockAMO takes the lock of PE pe's emulated AMOs when this host
// emulates them, for an AMO or signal that the sink applies with the
// CPU's atomics: it would not be atomic with a host-mate's emulated
// read, modify and write. It returns the lock to release, or nil. The
// holder keeps it for one CMA read and write; should the holder die
// with it, the sink stops waiting once the job has failed.
func (x *xsink) lockAMO(pe uint32) *atomic.Uint32 {
	if !x.emulated() {
		return nil
	}
	if !x.j.takeAMOLock(int(pe), &x.j.policy) {
		return nil
	}
	return &x.j.ctl.Slot(int(pe)).AMOLock
}

// unlockAMO releases a lock lockAMO took (nil: none).
func unlockAMO(l *atomic.Uint32) {
	if l != nil {
		l.Store(0)
	}
}

// ctlWordIn reports whether a 4-byte control word at offset off lies
// in a control block of size bytes, aligned (an xCtl frame's target).
// It cannot overflow: off+4 would wrap for an offset near 2^64 and let
// a malformed frame write in front of the block.
func ctlWordIn(off, size uint64) bool {
	return off%4 == 0 && size >= 4 && off <= size-4
}

// Buffer is where a payload goes: a put's straight into the target
// heap, an answer's into the requester's window.
func (x *xsink) Buffer(from int, h *internode.Header) []byte {
	switch h.Op {
	case xPut:
		if b, ok := x.target(h.PE, h.Off, uint64(h.Len)); ok {
			return mem.ByteSlice(b, uintptr(h.Off), int(h.Len))
		}
	case xReply:
		if int(h.PE) < len(x.local) && h.Len <= xWindow {
			return (*xhost)(x).window(int(h.PE))[:h.Len]
		}
	case xIPut:
		// Scattered by Deliver. Strided puts across hosts are not the
		// on-host hot path, and a frame's buffer must be its own (a
		// host's frames may be read by more than one goroutine).
		if h.Len <= xStackMax {
			return make([]byte, h.Len)
		}
	}
	x.bad(from, h)
	return make([]byte, h.Len) // read and dropped: the job fails
}

// Deliver applies one frame.
func (x *xsink) Deliver(from int, h *internode.Header, buf []byte) {
	j := x.j
	switch h.Op {
	case xPut:
		b, ok := x.target(h.PE, h.Off, uint64(h.Len))
		if !ok {
			return
		}
		switch h.Flags {
		case 0:
		case xPutFlag:
			if _, ok := x.target(h.PE, h.Arg1, 4); !ok || h.Arg1%4 != 0 {
				x.bad(from, h)
				return
			}
			l := x.lockAMO(h.PE)
			atomic.StoreUint32(mem.At[uint32](b, uintptr(h.Arg1)), uint32(h.Arg0))
			unlockAMO(l)
		case xPutSigSet, xPutSigAdd:
			if _, ok := x.target(h.PE, h.Arg1, 8); !ok || h.Arg1%8 != 0 {
				x.bad(from, h)
				return
			}
			l := x.lockAMO(h.PE)
			if w := mem.At[uint64](b, uintptr(h.Arg1)); h.Flags == xPutSigAdd {
				atomic.AddUint64(w, h.Arg0)
			} else {
				atomic.StoreUint64(w, h.Arg0)
			}
			unlockAMO(l)
		default:
			x.bad(from, h)
			return
		}
		if h.Flags == 0 {
			// Data only (a put, or the notification of an RDMA WRITE):
			// a PE asleep in a barrier sleeps on (wait.RingData). Flags
			// and signals may be team words, which control-only waits
			// read: those ring.
			wait.RingData(j.bell(int(h.PE)))
		} else {
			wait.Ring(j.bell(int(h.PE)))
		}
	case xGet:
		b, ok := x.target(h.PE, h.Off, h.Arg0)
		if !ok || h.Arg0 > xWindow {
			x.bad(from, h)
			return
		}
		x.reply(from, h, 0, mem.ByteSlice(b, uintptr(h.Off), int(h.Arg0)))
	case xIPut:
		x.scatter(from, h, buf)
	case xIGet:
		x.gather(from, h)
	case xAMO4, xAMO8, xPost4, xPost8:
		size := uint64(4)
		if h.Op == xAMO8 || h.Op == xPost8 {
			size = 8
		}
		b, ok := x.target(h.PE, h.Off, size)
		if !ok || h.Off%size != 0 || Op(h.Flags) > OpXor {
			x.bad(from, h)
			return
		}
		var old uint64
		l := x.lockAMO(h.PE)
		if size == 4 {
			old = uint64(apply32(Op(h.Flags), mem.At[uint32](b, uintptr(h.Off)), uint32(h.Arg0), uint32(h.Arg1)))
		} else {
			old = apply64(Op(h.Flags), mem.At[uint64](b, uintptr(h.Off)), h.Arg0, h.Arg1)
		}
		unlockAMO(l)
		if Op(h.Flags) != OpFetch {
			wait.Ring(j.bell(int(h.PE)))
		}
		if h.Op == xAMO4 || h.Op == xAMO8 {
			x.reply(from, h, old, nil)
		}
	case xCtl:
		if uint(h.PE) >= uint(len(x.hostOf)) || int(x.hostOf[h.PE]) != x.host || !ctlWordIn(h.Off, uint64(len(j.ctlMap.Bytes()))) {
			x.bad(from, h)
			return
		}
		atomic.StoreUint32(mem.At[uint32](mem.RegionOf(j.ctlMap.Bytes()).Base, uintptr(h.Off)), uint32(h.Arg0))
		wait.Ring(j.bell(int(h.PE)))
	case xQuiet:
		x.replyFlags(from, h, xCounted, 0, nil)
	case xReply:
		if int(h.PE) >= len(x.local) {
			x.bad(from, h)
			return
		}
		box := (*xhost)(x).box(int(h.PE))
		if h.Flags&xCounted != 0 {
			box.Acks.Add(1)
		} else {
			box.Val.Store(h.Arg0)
			box.Seq.Store(h.Seq)
		}
		wait.Ring(j.bell(x.local[h.PE]))
	case xAbort:
		x.heard.Store(true)
		if x.fwd.CompareAndSwap(false, true) { // the others heard it from its source
			x.fwdOnce.Do(func() { close(x.fwdDone) })
		}
		j.fail(uint32(h.Arg0), int(h.PE), 0, int(int64(h.Arg1)))
		if uint32(h.Arg0) == job.AbortGlobalExit {
			go func() { // see beforeExit
				<-x.trSet
				(*xhost)(x).quiescePMI()
				x.tr.Reply(from, &internode.Header{Op: xAbortAck}, nil)
				x.tr.Flush(from)
			}()
		}
	case xAbortAck:
		select {
		case x.acks <- from:
		default:
		}
	case xExit:
		(*xhost)(x).letExit()
	case xFinal:
		q := h.Arg1
		if uint(h.PE) >= uint(len(x.hostOf)) || int(x.hostOf[h.PE]) != x.host || q >= uint64(len(x.hostOf)) || int(x.hostOf[q]) == x.host {
			x.bad(from, h)
			return
		}
		// Another host's PE has a slot here that nothing else uses:
		// checkFinalized reads it as it reads this host's finalized
		// PEs'.
		s := j.ctl.Slot(int(q))
		s.FinalSyncs.Store(h.Arg0)
		s.State.Store(job.StateFinalized)
		j.ctl.Header.Finalized.Add(1)
		j.eachHostPE(func(pe int) { wait.WakeAll(j.bell(pe)) })
	case xTeamFinal:
		b, ok := x.target(h.PE, h.Off, 8)
		if !ok || h.Off%8 != 0 || h.Arg1 >= uint64(len(x.hostOf)) || int(x.hostOf[h.Arg1]) == x.host || h.Arg0 > math.MaxUint32 {
			x.bad(from, h)
			return
		}
		w := mem.At[atomic.Uint64](b, uintptr(h.Off))
		v := h.Arg0<<32 | (h.Arg1 + 1)
		for {
			old := w.Load()
			if old != 0 && old>>32 <= h.Arg0 || w.CompareAndSwap(old, v) {
				break
			}
		}
		// As a PE of this host entering Finalize does (teams'
		// checkFinal runs while the count is not 0).
		j.ctl.Header.Finalizing.Add(1)
		j.eachHostPE(func(pe int) { wait.WakeAll(j.bell(pe)) })
	default:
		x.bad(from, h)
	}
}

// reply answers request h from leader from.
func (x *xsink) reply(from int, h *internode.Header, v uint64, payload []byte) {
	x.replyFlags(from, h, 0, v, payload)
}

// replyFlags is reply with the answer's Flags.
func (x *xsink) replyFlags(from int, h *internode.Header, flags uint8, v uint64, payload []byte) {
	r := internode.Header{Op: xReply, Flags: flags, PE: uint32(h.Ctx), Seq: h.Seq, Arg0: v}
	r.Len = uint32(len(payload))
	<-x.trSet                     // (a request may come as soon as the other leaders have passed Open's fence)
	x.tr.Reply(from, &r, payload) // an error: Failed has been told
}

// bad fails the job on a frame that no goshmem leader sends.
func (x *xsink) bad(from int, h *internode.Header) {
	fmt.Fprintf(os.Stderr, "goshmem: host %s's leader sent a malformed frame (op %d, PE %d, offset %#x, %d bytes); ending the job\n",
		x.cl.Hosts[from], h.Op, h.PE, h.Off, h.Len)
	x.j.fail(job.AbortHost, x.cl.Leaders[from], 0, from)
}

// Failed is a lost leader: the job fails, naming it.
func (x *xsink) Failed(peer int, err error) {
	if x.closing.Load() {
		return
	}
	if x.j.ctl.Header.Abort.State.Load() == 0 && x.j.cfg.Info {
		fmt.Fprintf(os.Stderr, "goshmem: host %s: %v\n", x.cl.Hosts[peer], err)
	}
	x.j.fail(job.AbortHost, x.cl.Leaders[peer], 0, peer)
}

// The PE's side.

// xsend hands frame h (to the PE h.PE of another host) to the
// transport: directly on the leader, through the leader queue
// elsewhere (then the payload must fit a queue message). The caller
// holds xp.mu.
func (p *PE) xsend(routine string, h *internode.Header, payload []byte) {
	x, xp := p.job.x, p.x
	h.Ctx = xp.idx
	h.Len = uint32(len(payload))
	host := int(x.hostOf[h.PE])
	if appliedByCPU(h) && !xp.framed[host] {
		xp.framed[host], xp.framedAt[host] = true, xp.fences.Load()
	}
	if x.leader {
		x.netEvent() // answers or the peer's next frame may come (talking)
		// A plain put is held back (its payload copied) to leave with
		// the next frame: the flag after a Fence, or what the next
		// wait's Kick sends. A put that carries a flag or a signal is
		// what a peer waits for: it goes at once (a PE must not leave a
		// collective with its partial held).
		if h.Op == xPut && h.Flags == 0 && x.deferrer != nil && x.deferrer.Defer(host, mem.NoEscape(h), mem.NoEscapeBytes(payload)) {
			xp.held.Store(true)
			return
		}
		// The header and payload are not kept past the Flush: hidden
		// from escape analysis, they stay on the callers' stacks (the
		// on-host fast paths that share the slow path allocate nothing).
		err := x.tr.Send(host, mem.NoEscape(h), p.xstage(mem.NoEscapeBytes(payload)))
		if err == nil && len(payload) > 0 {
			err = x.tr.Flush(host) // the payload is the caller's
		}
		if err != nil {
			p.xlost(routine, host)
		}
		return
	}
	msg := xp.msg[:internode.HeaderSize+len(payload)]
	h.Encode(msg)
	copy(msg[internode.HeaderSize:], payload)
	if !x.q.TryPush(msg) {
		p.xpushSlow(routine, msg)
	}
}

// appliedByCPU reports whether frame h writes the target's memory by
// the target leader's CPU after it arrives (so an RDMA READ sent after
// it could pass it): a put with data, a flag or a signal, a posted
// AMO. A fetching AMO and a get are answered once applied; a plain
// put's notification writes nothing; xPutFrom's flag is noted by
// xwriteFrom.
func appliedByCPU(h *internode.Header) bool {
	switch h.Op {
	case xPut:
		return h.Len > 0 || h.Flags != 0
	case xPost4, xPost8, xIPut:
		return true
	}
	return false
}

// xstage returns b, or a copy of it in xp.stage when it may be on a
// goroutine stack (see xpe.stage). The copy is valid until the next
// call: the caller flushes before it returns.
func (p *PE) xstage(b []byte) []byte {
	if len(b) == 0 || len(b) > xStackMax {
		return b
	}
	if _, ok := p.job.x.win.Offset(mem.Addr(b), uintptr(len(b))); ok {
		return b
	}
	xp := p.x
	if len(xp.stage) < len(b) {
		xp.stage = make([]byte, max(len(b), 4<<10))
	}
	return xp.stage[:copy(xp.stage, b)]
}

// xwrite writes data at offset off of PE pe's heap segment (another
// host's) with an RDMA WRITE from a leader's process, then sends the
// frame notify after it (the target's leader rings pe's doorbell, and
// stores the flag or signal notify carries). It reports false, having
// done nothing, when there is no RDMA or data is small: send frames.
// The caller holds xp.mu.
func (p *PE) xwrite(routine string, pe int, off uintptr, data []byte, notify *internode.Header) bool {
	x := p.job.x
	if len(data) < x.rdmaMin { // (rdmaMin >= 1)
		return false
	}
	if !x.leader {
		return p.xwriteFrom(routine, pe, off, data, notify)
	}
	if x.rm == nil || !p.xfenced(pe, len(data)) {
		return false
	}
	host := int(x.hostOf[pe])
	if p.x.held.Load() {
		x.kick() // a put held back goes first
	}
	src := p.xstage(mem.NoEscapeBytes(data))
	ok, err := x.rm.Write(host, uint32(pe), uint64(off), src)
	if err == nil && !ok {
		return false // the region is not announced (yet)
	}
	if err == nil && !(nbi(routine) && len(src) > 0 && &src[0] == &data[0]) {
		// data is the caller's again when the put returns. A
		// non-blocking put's source is not until its Quiet, whose round
		// trip to the host follows the write on the queue pair: such a
		// write (when it was not staged: the staging buffer is the next
		// put's) goes without waiting, so a window of them fills the
		// link, as ib_write_bw's does.
		err = x.tr.Flush(host)
	}
	if err != nil {
		p.xlost(routine, host)
		return true
	}
	// After the Flush, so that a plain put's notification may be held
	// back (Deferrer) to leave with what follows, the flag after a
	// Fence: the data is in place before either.
	notify.PE, notify.Off = uint32(pe), uint64(off)
	p.xsend(routine, notify, nil)
	return true
}

// nbi reports whether routine is a non-blocking put (PutNBI,
// PutSignalNBI, ...): its source may not be changed until Quiet.
func nbi(routine string) bool { return strings.HasSuffix(routine, "NBI") }

// xfenced reports whether a put of n bytes to PE pe (another host's)
// may go as an RDMA WRITE as far as Fence is concerned. When a Fence
// orders frames not yet known applied before it (framed), a small put
// must go as frames after them (false); a large one first waits for a
// Quiet round trip there (far cheaper than its copy through frames),
// which tells that they are applied. The caller holds xp.mu.
func (p *PE) xfenced(pe, n int) bool {
	host := p.job.x.hostOf[pe]
	if !p.x.framed[host] || p.x.fences.Load() == p.x.framedAt[host] {
		return true
	}
	if n < xFenceQuietMin {
		return false
	}
	p.xquietHost(int(host))
	return true
}

// xwriteFrom is xwrite on a PE outside the leader's process: when data
// lies in the PE's own heap and the leader has exposed the heaps, the
// leader writes it with RDMA from there (xPutFrom) and answers when
// the source is read. The caller holds xp.mu.
func (p *PE) xwriteFrom(routine string, pe int, off uintptr, data []byte, notify *internode.Header) bool {
	if p.job.x.flags.RDMA.Load() == 0 {
		return false
	}
	src, ok := p.heap.Offset(mem.Addr(data), uintptr(len(data)))
	if !ok {
		return false // private memory: the leader cannot read it
	}
	if !p.xfenced(pe, len(data)) {
		return false
	}
	if host := p.job.x.hostOf[pe]; notify.Flags != 0 && !p.x.framed[host] {
		p.x.framed[host], p.x.framedAt[host] = true, p.x.fences.Load() // the target's CPU stores the flag or signal
	}
	var nb [internode.HeaderSize]byte
	notify.Encode(nb[:])
	h := internode.Header{Op: xPutFrom, PE: uint32(pe), Off: uint64(off), Arg0: uint64(src), Arg1: uint64(len(data))}
	p.xrequestWith(routine, &h, nb[:])
	return true
}

// xread reads len(buf) bytes at offset off of PE pe's heap segment with
// an RDMA READ: from a leader's process directly, from another PE's
// when buf lies in its heap through its leader (xGetInto). It reports
// false when this PE has frames in flight to pe's host that write
// memory (a READ could pass them) or there is no RDMA: get with
// frames. The caller holds xp.mu.
func (p *PE) xread(routine string, pe int, off uintptr, buf []byte) bool {
	x := p.job.x
	host := int(x.hostOf[pe])
	if p.x.framed[host] || len(buf) == 0 {
		return false
	}
	if !x.leader {
		// Into its own heap, its leader reads for it (xGetInto).
		dst, ok := p.heap.Offset(mem.Addr(buf), uintptr(len(buf)))
		if !ok || x.flags.RDMA.Load() == 0 {
			return false
		}
		h := internode.Header{Op: xGetInto, PE: uint32(pe), Off: uint64(off), Arg0: uint64(dst), Arg1: uint64(len(buf))}
		return p.xrequest(routine, &h) == 1
	}
	if x.rm == nil {
		return false
	}
	ok, err := x.rm.Read(host, uint32(pe), uint64(off), mem.NoEscapeBytes(buf))
	if err != nil {
		p.xlost(routine, host)
	}
	return ok
}

// xpushSlow waits for room in a full leader queue.
//
//go:noinline
func (p *PE) xpushSlow(routine string, msg []byte) {
	q := p.job.x.q
	p.WaitSlow(routine, func() bool { return q.TryPush(msg) })
}

// xlost is a failed send: the transport has told the Sink, which has
// recorded the failure; stop with it.
func (p *PE) xlost(routine string, host int) {
	p.checkAbort(routine)
	p.job.fail(job.AbortHost, p.job.x.cl.Leaders[host], 0, host)
	p.checkAbort(routine)
}

// xrequest sends request h and waits for its answer; it returns the
// answer's value (its payload is in xp.window). The caller holds xp.mu.
func (p *PE) xrequest(routine string, h *internode.Header) uint64 {
	return p.xrequestWith(routine, h, nil)
}

// xrequestWith is xrequest with a payload.
func (p *PE) xrequestWith(routine string, h *internode.Header, payload []byte) uint64 {
	xp := p.x
	xp.seq++
	h.Seq = xp.seq
	p.xsend(routine, h, payload)
	if int32(xp.box.Seq.Load()-h.Seq) < 0 {
		p.waitFlag(routine, &xp.box.Seq, h.Seq)
	}
	return xp.box.Val.Load()
}

// xmax is the largest payload of one frame this PE sends.
func (p *PE) xmax() int {
	if p.job.x.leader {
		return xMaxFrame
	}
	return p.job.x.q.Max() - internode.HeaderSize
}

// xput writes data at offset off of PE pe's heap segment (another
// host's), in frames the size of a queue message or, from the leader,
// of up to xMaxFrame bytes.
func (p *PE) xput(c *Ctx, routine string, pe int, off uintptr, data []byte) {
	xp := p.x
	xp.mu.Lock()
	defer xp.mu.Unlock()
	notify := internode.Header{Op: xPut}
	if p.xwrite(routine, pe, off, data, &notify) {
		p.xdirty(c, pe)
		return
	}
	max := p.xmax()
	for len(data) > 0 {
		n := min(len(data), max)
		h := internode.Header{Op: xPut, PE: uint32(pe), Off: uint64(off)}
		p.xsend(routine, &h, data[:n])
		data, off = data[n:], off+uintptr(n)
	}
	p.xdirty(c, pe)
}

// xputFlag writes data (at most xmax bytes) at offset off of PE pe's
// heap segment and then stores v into the 4-byte word at offset flag
// of it, in one frame (xPutFlag).
func (p *PE) xputFlag(c *Ctx, routine string, pe int, off uintptr, data []byte, flag uintptr, v uint32) {
	xp := p.x
	xp.mu.Lock()
	defer xp.mu.Unlock()
	if len(data) > p.xmax() {
		panicf("%s: %d bytes with a flag do not fit one frame (%d)", routine, len(data), p.xmax())
	}
	h := internode.Header{Op: xPut, Flags: xPutFlag, PE: uint32(pe), Off: uint64(off), Arg0: uint64(v), Arg1: uint64(flag)}
	if !p.xwrite(routine, pe, off, data, &h) {
		p.xsend(routine, &h, data)
	}
	p.xdirty(c, pe)
}

// xputSignal writes data at offset off of PE pe's heap segment, then
// sets or adds v to the signal word at offset sig of it: the signal
// travels with the last piece of the data (xPutSigSet, xPutSigAdd), so
// a PutSignal that fits one frame costs one message, not a put and a
// posted AMO.
func (p *PE) xputSignal(c *Ctx, routine string, pe int, off uintptr, data []byte, sig uintptr, v uint64, add bool) {
	xp := p.x
	xp.mu.Lock()
	defer xp.mu.Unlock()
	f := xPutSigSet
	if add {
		f = xPutSigAdd
	}
	notify := internode.Header{Op: xPut, Flags: f, Arg0: v, Arg1: uint64(sig)}
	if p.xwrite(routine, pe, off, data, &notify) {
		p.xdirty(c, pe)
		return
	}
	max := p.xmax()
	for len(data) > max {
		h := internode.Header{Op: xPut, PE: uint32(pe), Off: uint64(off)}
		p.xsend(routine, &h, data[:max])
		data, off = data[max:], off+uintptr(max)
	}
	h := internode.Header{Op: xPut, Flags: f, PE: uint32(pe), Off: uint64(off), Arg0: v, Arg1: uint64(sig)}
	p.xsend(routine, &h, data)
	p.xdirty(c, pe)
}

// xdirty notes that c wrote PE pe's host (c's Quiet will wait for it).
// Called with p.x.mu held.
func (p *PE) xdirty(c *Ctx, pe int) {
	xp, cx := p.x, c.x
	h := p.job.x.hostOf[pe]
	xp.sent[h]++
	cx.last[h] = xp.sent[h]
	if !cx.in[h] {
		cx.in[h] = true
		cx.hosts = append(cx.hosts, h)
	}
}

// ctxHostsState is a context's part of the completion of writes on
// other hosts: which hosts it wrote since its last Quiet (hosts, in)
// and, per host, the PE's write count after its last write there
// (last). Guarded by the PE's x.mu.
type ctxHostsState struct {
	last  []uint64
	in    []bool
	hosts []int32
}

func (x *xhost) newCtxHosts() *ctxHostsState {
	n := len(x.cl.Hosts)
	return &ctxHostsState{last: make([]uint64, n), in: make([]bool, n)}
}

// xget reads len(buf) bytes at offset off of PE pe's heap segment.
func (p *PE) xget(routine string, pe int, off uintptr, buf []byte) {
	xp := p.x
	xp.mu.Lock()
	defer xp.mu.Unlock()
	if p.xread(routine, pe, off, buf) {
		return
	}
	for len(buf) > 0 {
		n := min(len(buf), xWindow)
		h := internode.Header{Op: xGet, PE: uint32(pe), Off: uint64(off), Arg0: uint64(n)}
		p.xrequest(routine, &h)
		copy(buf[:n], xp.window[:n])
		buf, off = buf[n:], off+uintptr(n)
	}
}

// xamo runs AMO o on the size-byte word at offset off of PE pe's heap
// on that PE's host and returns the old value; fetch false does not
// wait for it (Quiet does).
func (p *PE) xamo(c *Ctx, routine string, pe int, off, size uintptr, o Op, v, cmp uint64, fetch bool) uint64 {
	xp := p.x
	xp.mu.Lock()
	defer xp.mu.Unlock()
	op := xAMO4
	if size == 8 {
		op = xAMO8
	}
	h := internode.Header{Op: op, Flags: uint8(o), PE: uint32(pe), Off: uint64(off), Arg0: v, Arg1: cmp}
	if !fetch {
		h.Op += xPost4 - xAMO4
		p.xsend(routine, &h, nil)
		p.xdirty(c, pe)
		return 0
	}
	return p.xrequest(routine, &h)
}

// xctl stores v into the control block word at offset off of PE pe's
// host and rings pe (a barrier flag).
func (p *PE) xctl(routine string, pe int, off uintptr, v uint32) {
	xp := p.x
	xp.mu.Lock()
	defer xp.mu.Unlock()
	h := internode.Header{Op: xCtl, PE: uint32(pe), Off: uint64(off), Arg0: uint64(v)}
	p.xsend(routine, &h, nil)
}

// xpublishAlloc writes this leader's allocation state (seq, hash and
// its latest call: see publishAlloc) into its slot in the control block
// of every other host, seven 32-bit words by leader (seq fits in one),
// counted as writes to those hosts so that the allocation's barrier,
// whose xquiet completes them, orders them before every PE there checks
// them.
func (p *PE) xpublishAlloc(routine string, seq, hash uint64, last [2]uint64) {
	x := p.job.x
	s := p.job.ctl.Slot(p.me)
	i := seq & 1
	l0, l1 := p.job.ctlAddrOffset(mem.PtrAddr(&s.AllocLast[i][0])), p.job.ctlAddrOffset(mem.PtrAddr(&s.AllocLast[i][1]))
	words := [7]struct {
		off uintptr
		v   uint32
	}{
		{l0, uint32(last[0])}, {l0 + 4, uint32(last[0] >> 32)},
		{l1, uint32(last[1])}, {l1 + 4, uint32(last[1] >> 32)},
		{p.job.ctlAddrOffset(mem.PtrAddr(&s.AllocSeq[i])), uint32(seq)},
		{p.job.ctlAddrOffset(mem.PtrAddr(&s.AllocHash[i])), uint32(hash)},
		{p.job.ctlAddrOffset(mem.PtrAddr(&s.AllocHash[i])) + 4, uint32(hash >> 32)},
	}
	xp := p.x
	xp.mu.Lock()
	defer xp.mu.Unlock()
	for h, l := range x.cl.Leaders {
		if h == x.host {
			continue
		}
		for _, w := range words {
			hd := internode.Header{Op: xCtl, PE: uint32(l), Off: uint64(w.off), Arg0: uint64(w.v)}
			p.xsend(routine, &hd, nil)
		}
		p.xdirty(&p.ctx, l)
	}
}

// xpublishFinal tells the leader of every other host that this PE
// entered Finalize and will have made syncs barriers of the whole job
// when its Finalize's barrier completes: a PE there that waits in a
// later barrier waits for a PE that will never join it, and fails the
// job (checkFinalized), where this host's PEs see the same in this PE's
// slot. Without it, a job whose PEs on one host all returned early hung
// on the other hosts. It goes before Finalize's barrier, which every
// host is still in (or before): after it, a host that finished its
// Finalize may be gone. The frames count as writes to those hosts, so
// Finalize's xquiet completes them before this PE arrives at the
// barrier: every host has this PE's slot marked before any hears of
// its arrival. (Without the round trip, a non-leader's xFinal, queued
// for its leader's progress goroutine, could reach a host after the
// barrier's frames that the leader sent itself: 6 runs in 150 under
// hydra on 2 hosts, where the barrier then completed as if this PE had
// called it.)
func (p *PE) xpublishFinal(syncs uint64) {
	x := p.job.x
	xp := p.x
	xp.mu.Lock()
	defer xp.mu.Unlock()
	for h, l := range x.cl.Leaders {
		if h != x.host {
			hd := internode.Header{Op: xFinal, PE: uint32(l), Arg0: syncs, Arg1: uint64(p.me)}
			p.xsend("Finalize", &hd, nil)
			p.xdirty(&p.ctx, l)
		}
	}
}

// xquiet completes c's puts and AMOs on other hosts: one round trip to
// every host c wrote since its last Quiet, unless a Quiet of the PE
// (on any context) was answered there after c's last write. The round
// trip completes every earlier write of the PE there, whatever the
// context. A nil c completes every write of the PE (Finalize). The
// round trips go out together and the PE waits once for all the
// answers (xquietHosts).
//
//go:noinline
func (p *PE) xquiet(c *Ctx) {
	xp := p.x
	xp.mu.Lock()
	defer xp.mu.Unlock()
	hosts := xp.quietTo[:0]
	if c == nil {
		for h := range xp.sent {
			if xp.sent[h] != xp.done[h] {
				hosts = append(hosts, int32(h))
			}
		}
	} else {
		cx := c.x
		for _, h := range cx.hosts {
			cx.in[h] = false
			if cx.last[h] > xp.done[h] {
				hosts = append(hosts, h)
			}
		}
		cx.hosts = cx.hosts[:0]
	}
	p.xquietHosts(hosts)
	xp.quietTo = hosts
}

// xquietHost is one Quiet round trip to host h (x.mu held).
func (p *PE) xquietHost(h int) {
	xp := p.x
	xp.quietTo = append(xp.quietTo[:0], int32(h))
	p.xquietHosts(xp.quietTo)
}

// xquietHosts makes a Quiet round trip to every host of hosts at once:
// it sends each an xQuiet (counted: the answers add to the mailbox's
// Acks, in whatever order they come) and then waits for them all, so
// a Quiet after writes on k hosts costs about one round trip, not k
// (x.mu held).
func (p *PE) xquietHosts(hosts []int32) {
	if len(hosts) == 0 {
		return
	}
	xp := p.x
	want := xp.box.Acks.Load() + uint32(len(hosts))
	for _, h := range hosts {
		hd := internode.Header{Op: xQuiet, PE: uint32(p.job.x.cl.Leaders[h])}
		p.xsend("Quiet", &hd, nil)
	}
	if int32(xp.box.Acks.Load()-want) < 0 {
		p.waitFlag("Quiet", &xp.box.Acks, want)
	}
	for _, h := range hosts {
		xp.done[h], xp.framed[h] = xp.sent[h], false
	}
	xp.quiets += uint64(len(hosts))
	xp.quietWaits++
}

// ctlOffset is the offset of w in the control block.
func (j *Job) ctlOffset(w *shm.Uint32) uintptr { return j.ctlAddrOffset(mem.PtrAddr(w)) }

// ctlAddrOffset is ctlOffset for the 4-byte word at addr.
func (j *Job) ctlAddrOffset(addr uintptr) uintptr {
	off, ok := mem.RegionOf(j.ctlMap.Bytes()).Offset(addr, 4)
	if !ok {
		panic("goshmem: internal error: a control word outside the control block")
	}
	return off
}

// HostOf returns the host index of PE q and true in a job that spans
// hosts (each host's PEs map each other's heaps: one shared-memory
// domain), and false otherwise.
func (p *PE) HostOf(q int) (int, bool) {
	if p.job.x == nil || uint(q) >= uint(p.npes) {
		return 0, false
	}
	return int(p.job.x.hostOf[q]), true
}

// HostPEs returns the PEs of this PE's host and the leader PE of every
// host, in a job that spans hosts (nil, nil otherwise). The slices must
// not be modified.
func (p *PE) HostPEs() (local, leaders []int) {
	if p.job.x == nil {
		return nil, nil
	}
	return p.job.x.local, p.job.x.cl.Leaders
}
