//go:build verbs && cgo && linux

package verbs

/*
#cgo LDFLAGS: -libverbs
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

// ibv_query_port and ibv_reg_mr are macros, ibv_post_send, ibv_post_recv
// and ibv_poll_cq static inline functions; the work requests' unions
// reach Go as byte arrays. These helpers are what cgo calls instead.

static int gs_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a) {
	return ibv_query_port(c, port, a);
}

static struct ibv_mr *gs_reg_mr(struct ibv_pd *pd, uintptr_t addr, size_t len, int access) {
	return ibv_reg_mr(pd, (void *)addr, len, access);
}

// gs_create_rc makes an RC queue pair with the most inline data of
// those it tries (256 bytes: a small put and its flag in one message;
// else 64; else none) and stores what the device granted in *inl.
static struct ibv_qp *gs_create_rc(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, int depth, uint32_t *inl) {
	static const uint32_t tries[] = {256, 64, 0};
	for (int i = 0; i < 3; i++) {
		struct ibv_qp_init_attr a;
		memset(&a, 0, sizeof a);
		a.send_cq = scq;
		a.recv_cq = rcq;
		a.qp_type = IBV_QPT_RC;
		a.cap.max_send_wr = depth;
		a.cap.max_recv_wr = depth;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		a.cap.max_inline_data = tries[i];
		struct ibv_qp *qp = ibv_create_qp(pd, &a);
		if (qp != NULL) {
			*inl = a.cap.max_inline_data;
			return qp;
		}
	}
	return NULL;
}

static int gs_to_init(struct ibv_qp *qp, uint8_t port, int access) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = access;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int gs_to_rtr(struct ibv_qp *qp, uint8_t port, int mtu, uint32_t dqpn, uint32_t rpsn,
                     uint16_t dlid, const uint8_t *dgid, int global, int sgid_index) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = rpsn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = dlid;
	a.ah_attr.port_num = port;
	if (global) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
		a.ah_attr.grh.sgid_index = sgid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int gs_to_rts(struct ibv_qp *qp, uint32_t psn) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = psn;
	a.max_rd_atomic = 16;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	                     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

// gs_post queues one signaled work request: opcode 0 SEND, 1 RDMA
// WRITE, 2 RDMA READ.
static int gs_post(struct ibv_qp *qp, uint64_t id, int op, uintptr_t addr, uint32_t len, uint32_t lkey,
                   uint64_t raddr, uint32_t rkey, uint32_t inl) {
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (op == 0 && len <= inl) wr.send_flags |= IBV_SEND_INLINE; // a small message: no DMA read of the buffer
	switch (op) {
	case 0: wr.opcode = IBV_WR_SEND; break;
	case 1: wr.opcode = IBV_WR_RDMA_WRITE; break;
	default: wr.opcode = IBV_WR_RDMA_READ; break;
	}
	if (op != 0) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

static int gs_post_recv(struct ibv_qp *qp, uint64_t id, uintptr_t addr, uint32_t len, uint32_t lkey) {
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(qp, &wr, &bad);
}

// gs_req_notify arms cq: the next completion raises one event on its
// channel.
static int gs_req_notify(struct ibv_cq *cq) { return ibv_req_notify_cq(cq, 0); }

// gs_channel makes a completion channel whose descriptor does not block.
static struct ibv_comp_channel *gs_channel(struct ibv_context *c) {
	struct ibv_comp_channel *ch = ibv_create_comp_channel(c);
	if (ch == NULL) return NULL;
	int f = fcntl(ch->fd, F_GETFL);
	if (f < 0 || fcntl(ch->fd, F_SETFL, f | O_NONBLOCK) < 0) {
		ibv_destroy_comp_channel(ch);
		return NULL;
	}
	return ch;
}

// gs_get_event takes one event from ch and acknowledges it: 0, or the
// errno (EAGAIN when there is none).
static int gs_get_event(struct ibv_comp_channel *ch) {
	struct ibv_cq *cq;
	void *ctx;
	if (ibv_get_cq_event(ch, &cq, &ctx) != 0) return errno ? errno : EIO;
	ibv_ack_cq_events(cq, 1);
	return 0;
}

// gs_wc is one completion as Go reads it.
struct gs_wc {
	uint64_t id;
	int op;
	uint32_t bytes;
	int status;
};

// gs_poll reaps up to n (at most 16) completions into out, C memory
// that the CQ owns (no Go pointer crosses, so nothing escapes to the Go
// heap per call); it returns the count, or a negative value on error.
static int gs_poll(struct ibv_cq *cq, int n, struct gs_wc *out) {
	struct ibv_wc wc[16];
	if (n > 16) n = 16;
	int got = ibv_poll_cq(cq, n, wc);
	for (int i = 0; i < got; i++) {
		out[i].id = wc[i].wr_id;
		switch (wc[i].opcode) {
		case IBV_WC_SEND: out[i].op = 0; break;
		case IBV_WC_RDMA_WRITE: out[i].op = 1; break;
		case IBV_WC_RDMA_READ: out[i].op = 2; break;
		default: out[i].op = 3; break;
		}
		out[i].bytes = wc[i].byte_len;
		out[i].status = wc[i].status;
	}
	return got;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"github.com/goshmem/goshmem/internal/sys"
)

// Device is an open RDMA device with its chosen port and a protection
// domain.
type Device struct {
	Name     string
	Port     int
	LinkETH  bool // RoCE (Ethernet link layer): connections need the GID
	LID      uint16
	GID      [16]byte
	GIDIndex int
	MTU      int // the port's active MTU as an ibv_mtu value (1 = 256 B ... 5 = 4096 B)

	ctx *C.struct_ibv_context
	pd  *C.struct_ibv_pd
}

// Open opens the device c names, or the first with an active port.
func Open(c Config) (*Device, error) {
	var n C.int
	list := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, noDevice(c, nil)
	}
	defer C.ibv_free_device_list(list)
	devs := unsafe.Slice(list, int(n))
	var names []string
	for _, d := range devs {
		names = append(names, C.GoString(C.ibv_get_device_name(d)))
	}
	var lastErr error
	for i, d := range devs {
		if c.Device != "" && names[i] != c.Device {
			continue
		}
		dev, err := openOne(d, names[i], c)
		if err == nil {
			return dev, nil
		}
		lastErr = err
	}
	if lastErr != nil && c.Device != "" {
		return nil, lastErr
	}
	return nil, noDevice(c, names)
}

func openOne(d *C.struct_ibv_device, name string, c Config) (*Device, error) {
	ctx := C.ibv_open_device(d)
	if ctx == nil {
		return nil, fmt.Errorf("verbs: ibv_open_device(%s) failed", name)
	}
	dev := &Device{Name: name, ctx: ctx, GIDIndex: c.GIDIndex}
	var attr C.struct_ibv_device_attr
	if r := C.ibv_query_device(ctx, &attr); r != 0 {
		dev.Close()
		return nil, fmt.Errorf("verbs: ibv_query_device(%s): %v", name, syscall.Errno(r))
	}
	ports := []int{c.Port}
	if c.Port == 0 {
		ports = nil
		for p := 1; p <= int(attr.phys_port_cnt); p++ {
			ports = append(ports, p)
		}
	}
	for _, p := range ports {
		var pa C.struct_ibv_port_attr
		if C.gs_query_port(ctx, C.uint8_t(p), &pa) != 0 || pa.state != C.IBV_PORT_ACTIVE {
			continue
		}
		dev.Port, dev.LID, dev.MTU = p, uint16(pa.lid), int(pa.active_mtu)
		dev.LinkETH = pa.link_layer == C.IBV_LINK_LAYER_ETHERNET
		var gid C.union_ibv_gid
		if C.ibv_query_gid(ctx, C.uint8_t(p), C.int(c.GIDIndex), &gid) == 0 {
			copy(dev.GID[:], C.GoBytes(unsafe.Pointer(&gid), 16))
		}
		if dev.LinkETH && !(Endpoint{GID: dev.GID}).hasGID() {
			dev.Close()
			return nil, fmt.Errorf("verbs: %s port %d is RoCE but GID index %d is empty: set SHMEM_VERBS_GID_INDEX (see the port's gids in /sys/class/infiniband/%s/ports/%d/gids)", name, p, c.GIDIndex, name, p)
		}
		dev.pd = C.ibv_alloc_pd(ctx)
		if dev.pd == nil {
			dev.Close()
			return nil, fmt.Errorf("verbs: ibv_alloc_pd(%s) failed", name)
		}
		return dev, nil
	}
	dev.Close()
	if c.Port != 0 {
		return nil, fmt.Errorf("verbs: %s port %d (SHMEM_VERBS_PORT) is not active", name, c.Port)
	}
	return nil, fmt.Errorf("verbs: %s has no active port", name)
}

// Close releases the protection domain and closes the device. Every
// queue pair, completion queue and registration must be closed first.
func (d *Device) Close() error {
	if d.pd != nil {
		C.ibv_dealloc_pd(d.pd)
		d.pd = nil
	}
	if d.ctx != nil {
		C.ibv_close_device(d.ctx)
		d.ctx = nil
	}
	return nil
}

// MR is a memory registration.
type MR struct {
	Addr uintptr
	Len  int
	LKey uint32
	RKey uint32
	mr   *C.struct_ibv_mr
	own  []byte // the mapping Alloc made (unmapped by Close)
}

// Alloc maps n bytes of anonymous memory (outside the Go heap) and
// registers them with the access flags a; Bytes returns them, Close
// deregisters and unmaps them.
func (d *Device) Alloc(n int, a Access) (*MR, error) {
	b, err := sys.MmapAnon(n)
	if err != nil {
		return nil, fmt.Errorf("verbs: buffers on %s: %w", d.Name, err)
	}
	m, err := d.Register(b, a)
	if err != nil {
		sys.Munmap(b)
		return nil, err
	}
	m.own = b
	return m, nil
}

// Bytes returns the memory Alloc mapped (nil for a Register of the
// caller's memory).
func (m *MR) Bytes() []byte { return m.own }

// Register registers b (not Go-allocated memory: a mapping) with the
// access flags a.
func (d *Device) Register(b []byte, a Access) (*MR, error) {
	if len(b) == 0 {
		return nil, errors.New("verbs: Register: empty buffer")
	}
	addr := uintptr(unsafe.Pointer(&b[0]))
	mr, err := C.gs_reg_mr(d.pd, C.uintptr_t(addr), C.size_t(len(b)), C.int(a))
	runtime.KeepAlive(b)
	if mr == nil {
		return nil, fmt.Errorf("verbs: registering %d bytes on %s: %v; the usual cause is the locked-memory limit: raise it (ulimit -l unlimited, or memlock in limits.conf / the launcher's configuration)", len(b), d.Name, err)
	}
	return &MR{Addr: addr, Len: len(b), LKey: uint32(mr.lkey), RKey: uint32(mr.rkey), mr: mr}, nil
}

// Close deregisters m.
func (m *MR) Close() error {
	if m.mr == nil {
		return nil
	}
	if r := C.ibv_dereg_mr(m.mr); r != 0 {
		return fmt.Errorf("verbs: ibv_dereg_mr: %v", syscall.Errno(r))
	}
	m.mr = nil
	if m.own != nil {
		sys.Munmap(m.own)
		m.own = nil
	}
	return nil
}

// CQ is a completion queue.
type CQ struct {
	cq *C.struct_ibv_cq
	ch *C.struct_ibv_comp_channel // NewNotifyCQ's channel
	f  *os.File                   // a duplicate of ch's descriptor, in the runtime's poller
	// wc is Poll's buffer of 16 completions, in C memory: Go arrays
	// passed to C would escape, four allocations per poll.
	wc *C.struct_gs_wc
}

// NewNotifyCQ makes a completion queue with a completion channel, so a
// goroutine can sleep until a completion comes (Arm, then Wait) without
// holding an OS thread: the channel's descriptor waits in the Go
// runtime's network poller.
func (d *Device) NewNotifyCQ(depth int) (*CQ, error) {
	ch := C.gs_channel(d.ctx)
	if ch == nil {
		return nil, fmt.Errorf("verbs: ibv_create_comp_channel on %s failed", d.Name)
	}
	fd, err := syscall.Dup(int(ch.fd))
	if err != nil {
		C.ibv_destroy_comp_channel(ch)
		return nil, fmt.Errorf("verbs: dup of the completion channel: %w", err)
	}
	syscall.CloseOnExec(fd)
	cq, cerr := C.ibv_create_cq(d.ctx, C.int(depth), nil, ch, 0)
	if cq == nil {
		syscall.Close(fd)
		C.ibv_destroy_comp_channel(ch)
		return nil, fmt.Errorf("verbs: ibv_create_cq(%d) on %s: %v", depth, d.Name, cerr)
	}
	return &CQ{cq: cq, ch: ch, f: os.NewFile(uintptr(fd), "verbs-cq-channel"), wc: newWCs()}, nil
}

// Arm asks for an event at the next completion (once). Poll again after
// Arm before Wait: a completion that came before Arm raises none.
func (q *CQ) Arm() error {
	if r := C.gs_req_notify(q.cq); r != 0 {
		return fmt.Errorf("verbs: ibv_req_notify_cq: %v", syscall.Errno(r))
	}
	return nil
}

// Wait sleeps until the armed CQ has an event, or until deadline or a
// Wake (an error wrapping os.ErrDeadlineExceeded), or until StopWaits
// (an error wrapping os.ErrClosed). skip, if not nil, is called once
// the deadline is set: true returns at once (as a Wake does), so a
// waker that first records its request and then calls Wake is never
// missed.
func (q *CQ) Wait(deadline time.Time, skip func() bool) error {
	if q.f == nil {
		return errors.New("verbs: Wait on a CQ without a channel (NewNotifyCQ makes one)")
	}
	q.f.SetReadDeadline(deadline)
	if skip != nil && skip() {
		return fmt.Errorf("verbs: CQ wait skipped: %w", os.ErrDeadlineExceeded)
	}
	rc, err := q.f.SyscallConn()
	if err != nil {
		return err
	}
	var got C.int
	if err := rc.Read(func(uintptr) bool {
		got = C.gs_get_event(q.ch)
		return got != C.EAGAIN
	}); err != nil {
		return err
	}
	if got != 0 {
		return fmt.Errorf("verbs: ibv_get_cq_event: %v", syscall.Errno(got))
	}
	return nil
}

// Wake ends the Wait in progress, if any, as its deadline would.
func (q *CQ) Wake() {
	if q.f != nil {
		q.f.SetReadDeadline(time.Now())
	}
}

// StopWaits ends the Wait in progress and every later one (with
// os.ErrClosed). Call it, and let the waiter return, before Close.
func (q *CQ) StopWaits() {
	if q.f != nil {
		q.f.Close()
	}
}

// NewCQ makes a completion queue of at least depth entries.
func (d *Device) NewCQ(depth int) (*CQ, error) {
	cq, err := C.ibv_create_cq(d.ctx, C.int(depth), nil, nil, 0)
	if cq == nil {
		return nil, fmt.Errorf("verbs: ibv_create_cq(%d) on %s: %v", depth, d.Name, err)
	}
	return &CQ{cq: cq, wc: newWCs()}, nil
}

// Poll reaps up to len(out) completions (at most 16 per call) without
// waiting and returns how many it stored. Calls on one CQ must not
// overlap (they share its buffer): the transport reaps under its lock.
func (q *CQ) Poll(out []Completion) (int, error) {
	n := C.gs_poll(q.cq, C.int(min(len(out), 16)), q.wc)
	if n < 0 {
		return 0, fmt.Errorf("verbs: ibv_poll_cq failed (%d)", int(n))
	}
	wc := unsafe.Slice(q.wc, 16)
	for i := range int(n) {
		w := &wc[i]
		c := Completion{ID: uint64(w.id), Op: Opcode(w.op), Bytes: int(w.bytes), Status: int(w.status)}
		if c.Status != 0 {
			c.Err = C.GoString(C.ibv_wc_status_str(C.enum_ibv_wc_status(w.status)))
		}
		out[i] = c
	}
	return int(n), nil
}

// newWCs allocates a CQ's completion buffer in C memory (freed by
// Close).
func newWCs() *C.struct_gs_wc {
	return (*C.struct_gs_wc)(C.calloc(16, C.size_t(unsafe.Sizeof(C.struct_gs_wc{}))))
}

// Close destroys q.
func (q *CQ) Close() error {
	if q.cq == nil {
		return nil
	}
	if r := C.ibv_destroy_cq(q.cq); r != 0 {
		return fmt.Errorf("verbs: ibv_destroy_cq: %v", syscall.Errno(r))
	}
	q.cq = nil
	C.free(unsafe.Pointer(q.wc))
	q.wc = nil
	if q.ch != nil {
		q.StopWaits()
		C.ibv_destroy_comp_channel(q.ch)
		q.ch = nil
	}
	return nil
}

// RC is a reliable connected queue pair.
type RC struct {
	d   *Device
	qp  *C.struct_ibv_qp
	psn uint32
	inl uint32 // most bytes a SEND carries inline (the device's grant)
}

// NewRC makes an RC queue pair whose sends and receives complete on
// send and recv (which may be the same CQ), with depth outstanding work
// requests each way, in state INIT with remote write and read allowed.
func (d *Device) NewRC(send, recv *CQ, depth int) (*RC, error) {
	var inl C.uint32_t
	qp, err := C.gs_create_rc(d.pd, send.cq, recv.cq, C.int(depth), &inl)
	if qp == nil {
		return nil, fmt.Errorf("verbs: ibv_create_qp(RC, depth %d) on %s: %v", depth, d.Name, err)
	}
	r := &RC{d: d, qp: qp, psn: rand.Uint32() & 0xffffff, inl: uint32(inl)}
	if e := C.gs_to_init(qp, C.uint8_t(d.Port), C.int(LocalWrite|RemoteWrite|RemoteRead)); e != 0 {
		r.Close()
		return nil, fmt.Errorf("verbs: queue pair to INIT: %v", syscall.Errno(e))
	}
	return r, nil
}

// Endpoint returns what the peer needs to connect to r.
func (r *RC) Endpoint() Endpoint {
	return Endpoint{QPN: uint32(r.qp.qp_num), PSN: r.psn, LID: r.d.LID, GID: r.d.GID}
}

// Connect moves r to ready-to-send, connected to the peer's queue pair
// e.
func (r *RC) Connect(e Endpoint) error {
	d := r.d
	global := d.LinkETH || e.hasGID() && e.LID == 0
	if d.LinkETH && !e.hasGID() {
		return fmt.Errorf("verbs: connect to %v: the peer sent no GID, which RoCE needs", e)
	}
	gid := e.GID
	if x := C.gs_to_rtr(r.qp, C.uint8_t(d.Port), C.int(d.MTU), C.uint32_t(e.QPN), C.uint32_t(e.PSN),
		C.uint16_t(e.LID), (*C.uint8_t)(unsafe.Pointer(&gid[0])), C.int(b2n(global)), C.int(d.GIDIndex)); x != 0 {
		return fmt.Errorf("verbs: queue pair %d to RTR (peer %v): %v", r.qp.qp_num, e, syscall.Errno(x))
	}
	if x := C.gs_to_rts(r.qp, C.uint32_t(r.psn)); x != 0 {
		return fmt.Errorf("verbs: queue pair %d to RTS: %v", r.qp.qp_num, syscall.Errno(x))
	}
	return nil
}

// PostWrite queues an RDMA WRITE of local (inside m) to raddr in the
// peer's registration with rkey; it completes on the send CQ with id.
func (r *RC) PostWrite(id uint64, m *MR, local []byte, raddr uint64, rkey uint32) error {
	return r.post(id, 1, m, local, raddr, rkey)
}

// PostRead queues an RDMA READ of len(local) bytes from raddr into
// local.
func (r *RC) PostRead(id uint64, m *MR, local []byte, raddr uint64, rkey uint32) error {
	return r.post(id, 2, m, local, raddr, rkey)
}

// PostSend queues a SEND of local to the peer's next posted receive.
func (r *RC) PostSend(id uint64, m *MR, local []byte) error {
	return r.post(id, 0, m, local, 0, 0)
}

func (r *RC) post(id uint64, op int, m *MR, local []byte, raddr uint64, rkey uint32) error {
	addr, err := m.span("post", local)
	if err != nil {
		return err
	}
	if x := C.gs_post(r.qp, C.uint64_t(id), C.int(op), C.uintptr_t(addr), C.uint32_t(len(local)), C.uint32_t(m.LKey),
		C.uint64_t(raddr), C.uint32_t(rkey), C.uint32_t(r.inl)); x != 0 {
		return fmt.Errorf("verbs: ibv_post_send: %v", syscall.Errno(x))
	}
	return nil
}

// PostRecv posts local (inside m) as a receive buffer.
func (r *RC) PostRecv(id uint64, m *MR, local []byte) error {
	addr, err := m.span("PostRecv", local)
	if err != nil {
		return err
	}
	if x := C.gs_post_recv(r.qp, C.uint64_t(id), C.uintptr_t(addr), C.uint32_t(len(local)), C.uint32_t(m.LKey)); x != 0 {
		return fmt.Errorf("verbs: ibv_post_recv: %v", syscall.Errno(x))
	}
	return nil
}

// Contains reports whether b (not empty) lies inside m.
func (m *MR) Contains(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	a := uintptr(unsafe.Pointer(&b[0]))
	return a >= m.Addr && a+uintptr(len(b)) <= m.Addr+uintptr(m.Len)
}

// span checks that b lies inside m and returns its address.
func (m *MR) span(routine string, b []byte) (uintptr, error) {
	if len(b) == 0 {
		return m.Addr, nil
	}
	a := uintptr(unsafe.Pointer(&b[0]))
	if a < m.Addr || a+uintptr(len(b)) > m.Addr+uintptr(m.Len) {
		return 0, fmt.Errorf("verbs: %s: buffer [%#x, +%d) is outside the registration [%#x, +%d)", routine, a, len(b), m.Addr, m.Len)
	}
	return a, nil
}

// Close destroys r.
func (r *RC) Close() error {
	if r.qp == nil {
		return nil
	}
	if x := C.ibv_destroy_qp(r.qp); x != 0 {
		return fmt.Errorf("verbs: ibv_destroy_qp: %v", syscall.Errno(x))
	}
	r.qp = nil
	return nil
}
