// Package xpmem models XPMEM (cross-process memory) over goshmem's
// shared-memory segments: one process exports a segment, others on the
// same node get access to it and attach (map) ranges of it, so that
// loads and stores reach the owner's memory directly, with no copy
// through the kernel.
//
// # The model
//
// XPMEM's calls map onto this package as follows.
//
//	xpmem_make(vaddr, size, permit)  Make(seg, permit) *Export; (*Export).ID() Segid
//	xpmem_remove(segid)              (*Export).Remove()
//	xpmem_get(segid, ..., permit)    Get(segid) *Access
//	xpmem_attach(addr, size, ...)    (*Access).Attach(off, size) *Attachment
//	xpmem_detach(vaddr)              (*Attachment).Detach()
//	xpmem_release(apid)              (*Access).Release()
//
// The unit of export is an fd-backed shm.Segment (a PE's symmetric heap)
// rather than an arbitrary address range. Make duplicates the segment's
// descriptor, so that the export lives on independently of the Segment,
// and names it with a Segid: the owner's pid, the number of the
// duplicated descriptor, and the file's device and inode numbers. The
// Segid's text form (String, ParseSegid) is what travels between
// processes, over a pipe or in the environment, as an xpmem_segid_t
// would.
//
// Get turns a Segid into an Access (XPMEM's apid). In the owner's own
// process it duplicates the exported descriptor; in another process it
// opens a pidfd for the owner (pidfd_open(2)) and copies the descriptor
// out of it (pidfd_getfd(2), Linux 5.6 or later). Either way it then
// checks that the descriptor refers to the file the Segid names, so that
// a descriptor number the owner has closed and reused for another file
// reads as removed, not as someone else's memory. Attach maps a range of
// the segment (any byte offset; the mapping is page aligned underneath)
// and Detach unmaps it.
//
// # Permissions
//
// With PermitOwner, Get first compares the caller's real uid with the
// owner's real and effective uids (from /proc/PID/status) and refuses a
// foreign caller with ErrForeign, even when the caller is root: it is a
// permission model, like XPMEM's permit mode, not a capability check.
// With PermitAny that check is skipped. In both cases the kernel has the
// last word: pidfd_getfd needs ptrace access to the owner
// (PTRACE_MODE_ATTACH_REALCREDS: the same uid and a dumpable owner, or
// CAP_SYS_PTRACE, and under Yama ptrace_scope=1 only an ancestor of the
// owner qualifies), and a refusal there is also ErrForeign. Because the
// Permit travels inside the Segid and is checked by the getter, it is a
// cooperative check between well-behaved processes; the security
// boundary is the kernel's.
//
// # Differences from XPMEM
//
//   - Remove stops new Gets (they fail with ErrRemoved) but does not
//     revoke existing accesses and attachments: the kernel keeps the file
//     alive while any descriptor or mapping refers to it. XPMEM tears
//     down other processes' attachments on xpmem_remove.
//   - When the owner exits, Get fails with ErrNoProcess, but again
//     existing accesses and attachments keep working.
//   - Release leaves existing attachments valid, as in XPMEM.
//   - There is no kernel driver and no /dev/xpmem: only memfd or tmpfs
//     segments, pidfds and mmap.
//
// A runtime whose processes already hold an inherited descriptor of
// every heap (handed down by the launcher) needs no Get at all: Local
// wraps such a descriptor in an Access, and Attach maps it.
//
// The package has no package-level mutable state; Export, Access and
// Attachment are safe for concurrent use. Releasing twice, detaching
// twice or attaching through a released Access returns an error that
// wraps fs.ErrClosed (os.ErrClosed); removing twice returns one that
// wraps ErrRemoved.
package xpmem

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sync"

	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/shm"
)

// Errors that Get, Attach and the others wrap; test for them with
// errors.Is. The returned errors also wrap the underlying system error,
// if any.
var (
	// ErrRemoved: the segment's export has been removed (its descriptor
	// is closed, or its number now refers to another file).
	ErrRemoved = errors.New("segment removed")
	// ErrForeign: the caller may not get the segment (PermitOwner and a
	// different user, or the kernel refused to duplicate the descriptor).
	ErrForeign = errors.New("permission denied")
	// ErrNoProcess: the owner process does not exist (any more).
	ErrNoProcess = errors.New("owner process does not exist")
	// ErrBadSegid: a Segid, or its text form, is malformed.
	ErrBadSegid = errors.New("malformed segid")
	// ErrOutOfRange: an Attach range does not lie within the segment.
	ErrOutOfRange = errors.New("range outside segment")
)

// Export is an exported segment (XPMEM's segid on the owner's side). It
// holds its own descriptor of the segment until Remove; it is not
// removed when it becomes unreachable, just as an XPMEM segment lives
// until xpmem_remove or the owner's exit.
type Export struct {
	id Segid

	mu   sync.Mutex
	fd   int  // the exported descriptor while live
	live bool // made by Make and not removed: the zero Export owns no descriptor
}

// Make exports seg with the given permit. It duplicates seg's
// descriptor: seg may be closed afterwards without affecting the export.
func Make(seg *shm.Segment, permit Permit) (*Export, error) {
	if !permit.valid() {
		return nil, fmt.Errorf("xpmem.Make: unknown permit %s", permit)
	}
	if seg == nil || seg.Fd() < 0 {
		return nil, fmt.Errorf("xpmem.Make: segment is closed: %w", fs.ErrClosed)
	}
	fd, err := sys.Dup(seg.Fd())
	if err != nil {
		return nil, fmt.Errorf("xpmem.Make %s: %w", seg.File().Name(), err)
	}
	dev, ino, err := sys.FileID(fd)
	if err == nil && fd > math.MaxInt32 {
		err = fmt.Errorf("descriptor %d does not fit a segid", fd)
	}
	if err != nil {
		sys.Close(fd)
		return nil, fmt.Errorf("xpmem.Make %s: %w", seg.File().Name(), err)
	}
	id := Segid{Pid: int32(sys.Getpid()), Fd: int32(fd), Dev: dev, Ino: ino, Permit: permit}
	return &Export{id: id, fd: fd, live: true}, nil
}

// ID returns the segment's id, to be passed (as text) to other
// processes. It stays the same after Remove.
func (e *Export) ID() Segid { return e.id }

// Remove ends the export: it closes the exported descriptor, and Get of
// the segment fails with ErrRemoved afterwards, in this process and in
// others. Accesses and attachments made before stay valid. Removing
// twice, or removing the zero Export (which owns no descriptor), returns
// an error wrapping ErrRemoved.
func (e *Export) Remove() error {
	if e == nil {
		return fmt.Errorf("xpmem.Remove: nil export: %w", ErrRemoved)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.live {
		return fmt.Errorf("xpmem.Remove %s: already removed, or not made by Make: %w", e.id, ErrRemoved)
	}
	err := sys.Close(e.fd)
	e.fd, e.live = -1, false
	if err != nil {
		return fmt.Errorf("xpmem.Remove %s: %w", e.id, err)
	}
	return nil
}

// Get gets access to the segment id names (xpmem_get). In the owner's
// process it duplicates the exported descriptor; in another process it
// copies it with pidfd_open(2) and pidfd_getfd(2). It then checks that
// the descriptor still refers to the exported file.
//
// Errors wrap ErrBadSegid (id is malformed), ErrNoProcess (the owner
// does not exist or has exited), ErrForeign (PermitOwner and the caller
// is another user, or the kernel refused access to the owner's
// descriptors) or ErrRemoved (the export was removed).
//
// A pid reused by another process after the owner's exit is caught by
// the device and inode check (ErrRemoved), or by the permit check
// (ErrForeign) if the new process belongs to someone else.
func Get(id Segid) (*Access, error) {
	if err := id.validate(); err != nil {
		return nil, fmt.Errorf("xpmem.Get %s: %v: %w", id, err, ErrBadSegid)
	}
	var fd int
	var err error
	if int(id.Pid) == sys.Getpid() {
		fd, err = getOwn(id)
	} else {
		fd, err = getOther(id)
	}
	if err == nil {
		err = checkFile(fd, id)
		if err != nil {
			sys.Close(fd)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("xpmem.Get %s: %w", id, err)
	}
	a, err := newAccess(fd, "xpmem:"+id.String())
	if err != nil {
		return nil, fmt.Errorf("xpmem.Get %s: %w", id, err)
	}
	return a, nil
}

// getOwn duplicates a descriptor this process exported.
func getOwn(id Segid) (int, error) {
	fd, err := sys.Dup(int(id.Fd))
	if err != nil {
		if errors.Is(err, sys.ErrBadFd) {
			return -1, fmt.Errorf("%w: descriptor %d is closed: %w", ErrRemoved, id.Fd, err)
		}
		return -1, err
	}
	return fd, nil
}

// getOther copies the exported descriptor out of the owner process.
func getOther(id Segid) (int, error) {
	pid := int(id.Pid)
	pidfd, err := sys.PidfdOpen(pid)
	if err != nil {
		switch {
		case errors.Is(err, sys.ErrSrch):
			return -1, fmt.Errorf("%w: no process %d: %w", ErrNoProcess, pid, err)
		case errors.Is(err, sys.ErrNoSys):
			return -1, fmt.Errorf("pidfds need Linux 5.6 or later: %w", err)
		}
		return -1, err
	}
	defer sys.Close(pidfd)
	exited := func() error {
		return fmt.Errorf("%w: process %d has exited", ErrNoProcess, pid)
	}
	if sys.PidfdExited(pidfd) {
		return -1, exited()
	}
	if id.Permit == PermitOwner {
		if err := checkOwner(pid, pidfd); err != nil {
			return -1, err
		}
	}
	fd, err := sys.PidfdGetfd(pidfd, int(id.Fd))
	if err != nil {
		switch {
		case sys.PidfdExited(pidfd) || errors.Is(err, sys.ErrSrch):
			// An exited process has no descriptors (EBADF) and, for
			// another user, no ptrace access (EPERM): say why.
			return -1, exited()
		case errors.Is(err, sys.ErrBadFd):
			return -1, fmt.Errorf("%w: descriptor %d of process %d is closed: %w", ErrRemoved, id.Fd, pid, err)
		case errors.Is(err, sys.ErrPerm), errors.Is(err, sys.ErrAccess):
			return -1, fmt.Errorf("%w: the kernel refused to copy descriptor %d of process %d "+
				"(pidfd_getfd needs ptrace access: the same user and a dumpable process, or CAP_SYS_PTRACE; "+
				"see /proc/sys/kernel/yama/ptrace_scope): %w", ErrForeign, id.Fd, pid, err)
		case errors.Is(err, sys.ErrNoSys):
			return -1, fmt.Errorf("pidfd_getfd needs Linux 5.6 or later: %w", err)
		}
		return -1, err
	}
	return fd, nil
}

// checkOwner enforces PermitOwner: the caller's real uid must equal the
// owner's real and effective uids. pidfd pins the owner, so that a pid
// reused while /proc is read is noticed.
func checkOwner(pid, pidfd int) error {
	ruid, euid, err := procUids(pid)
	if sys.PidfdExited(pidfd) {
		return fmt.Errorf("%w: process %d has exited", ErrNoProcess, pid)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// The process is alive (the pidfd says so) but /proc does
			// not show it to us: hidepid, i.e. another user's process.
			return fmt.Errorf("%w: cannot read the owner of process %d (/proc mounted with hidepid?): %w",
				ErrForeign, pid, err)
		}
		return fmt.Errorf("checking the owner of process %d: %w", pid, err)
	}
	me := sys.Getuid()
	if ruid != me || euid != me {
		return fmt.Errorf("%w: the segment is private to its owner, process %d (uid %d, effective uid %d), and the caller is uid %d",
			ErrForeign, pid, ruid, euid, me)
	}
	return nil
}

// checkFile verifies that fd is the file id names.
func checkFile(fd int, id Segid) error {
	dev, ino, err := sys.FileID(fd)
	if err != nil {
		return err
	}
	if dev != id.Dev || ino != id.Ino {
		return fmt.Errorf("%w: descriptor %d of process %d now refers to another file (device %d, inode %d)",
			ErrRemoved, id.Fd, id.Pid, dev, ino)
	}
	return nil
}

// Local returns an Access to a segment this process already holds a
// descriptor of, such as a heap inherited from the launcher: it
// duplicates seg's descriptor, so seg and the Access may be closed and
// released independently.
func Local(seg *shm.Segment) (*Access, error) {
	if seg == nil || seg.Fd() < 0 {
		return nil, fmt.Errorf("xpmem.Local: segment is closed: %w", fs.ErrClosed)
	}
	name := seg.File().Name()
	fd, err := sys.Dup(seg.Fd())
	if err != nil {
		return nil, fmt.Errorf("xpmem.Local %s: %w", name, err)
	}
	a, err := newAccess(fd, name)
	if err != nil {
		return nil, fmt.Errorf("xpmem.Local %s: %w", name, err)
	}
	return a, nil
}

// Access is access to a segment (XPMEM's apid): a descriptor of it,
// through which ranges can be attached.
type Access struct {
	size  int64
	align int64 // mmap offset alignment

	mu  sync.Mutex
	seg *shm.Segment // nil after Release
}

// newAccess adopts fd, closing it on error.
func newAccess(fd int, name string) (*Access, error) {
	align, err := sys.MmapAlignment(fd)
	if err != nil {
		sys.Close(fd)
		return nil, err
	}
	seg, err := shm.FromFD(fd, name)
	if err != nil {
		sys.Close(fd)
		return nil, err
	}
	return &Access{size: seg.Size(), align: align, seg: seg}, nil
}

// Size returns the segment's size in bytes when access was obtained.
func (a *Access) Size() int64 { return a.size }

// Attach maps [off, off+size) of the segment, shared and read-write
// (xpmem_attach). off need not be page aligned. The range must lie
// within the segment and size must be positive; otherwise the error
// wraps ErrOutOfRange. Attaching through a released Access fails with
// an error wrapping fs.ErrClosed.
func (a *Access) Attach(off, size int64) (*Attachment, error) {
	return a.attach(off, size, 0)
}

// AttachAligned is Attach at an address that is a multiple of align (a
// power of two), the model's form of xpmem_attach's requested address:
// goshmem maps symmetric heaps so that aligned offsets are aligned in
// every process. off must be a multiple of the segment's page size.
func (a *Access) AttachAligned(off, size int64, align uintptr) (*Attachment, error) {
	if align == 0 || align&(align-1) != 0 {
		return nil, fmt.Errorf("xpmem.AttachAligned: alignment %d is not a power of two", align)
	}
	return a.attach(off, size, align)
}

func (a *Access) attach(off, size int64, align uintptr) (*Attachment, error) {
	if a == nil {
		return nil, fmt.Errorf("xpmem.Attach: nil access: %w", fs.ErrClosed)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seg == nil {
		return nil, fmt.Errorf("xpmem.Attach: access already released: %w", fs.ErrClosed)
	}
	total := a.size
	// Never map past the end of the file (touching such a page would
	// raise SIGBUS), even if the owner has shrunk it since.
	if cur, err := sys.FileSize(a.seg.Fd()); err == nil && cur < total {
		total = cur
	}
	if off < 0 || size <= 0 || off > total || size > total-off {
		return nil, fmt.Errorf("xpmem.Attach %s: offset %d, size %d: %w of %d bytes (want offset >= 0, size > 0, offset+size <= %d)",
			a.seg.File().Name(), off, size, ErrOutOfRange, total, total)
	}
	start := off - off%a.align
	length := off + size - start
	if a.align > 1 && length%a.align != 0 && start+length < total {
		// hugetlbfs wants whole huge pages.
		length = min(length+a.align-length%a.align, total-start)
	}
	var m *shm.Mapping
	var err error
	if align > 1 {
		if start != off {
			return nil, fmt.Errorf("xpmem.AttachAligned %s: offset %d is not a multiple of the page size %d", a.seg.File().Name(), off, a.align)
		}
		m, err = a.seg.MapAligned(start, length, align)
	} else {
		m, err = a.seg.Map(start, length)
	}
	if err != nil {
		return nil, fmt.Errorf("xpmem.Attach %s [%d, %d): %w", a.seg.File().Name(), off, off+size, err)
	}
	lo := off - start
	return &Attachment{m: m, b: m.Bytes()[lo : lo+size : lo+size]}, nil
}

// Release gives up the access (xpmem_release): it closes the access's
// descriptor. Attachments made through it stay valid until detached.
// Releasing twice returns an error wrapping fs.ErrClosed.
func (a *Access) Release() error {
	if a == nil {
		return fmt.Errorf("xpmem.Release: nil access: %w", fs.ErrClosed)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seg == nil {
		return fmt.Errorf("xpmem.Release: access already released: %w", fs.ErrClosed)
	}
	name := a.seg.File().Name()
	err := a.seg.Close()
	a.seg = nil
	if err != nil {
		return fmt.Errorf("xpmem.Release %s: %w", name, err)
	}
	return nil
}

// Attachment is a mapped range of a segment.
type Attachment struct {
	mu sync.Mutex
	m  *shm.Mapping // nil after Detach
	b  []byte
}

// Bytes returns the attached memory: exactly the size bytes asked for,
// starting at the offset asked for. It returns nil after Detach; slices
// obtained before must not be used after Detach.
func (t *Attachment) Bytes() []byte {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b
}

// Detach unmaps the attachment (xpmem_detach). Detaching twice returns
// an error wrapping fs.ErrClosed.
func (t *Attachment) Detach() error {
	if t == nil {
		return fmt.Errorf("xpmem.Detach: nil attachment: %w", fs.ErrClosed)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		return fmt.Errorf("xpmem.Detach: already detached: %w", fs.ErrClosed)
	}
	err := t.m.Close()
	t.m, t.b = nil, nil
	if err != nil {
		return fmt.Errorf("xpmem.Detach: %w", err)
	}
	return nil
}
