// Package sys is the only place in goshmem that makes system calls
// through golang.org/x/sys/unix. Every other package calls these thin,
// typed wrappers, so that the set of kernel interfaces the runtime
// depends on is visible in one file list: memfd and tmpfs segments,
// mmap, futex, scheduling, process_vm_readv/writev and pidfds.
//
// The wrappers return plain errors (wrapped errno values); callers turn
// them into messages that say what the user can do.
package sys

import (
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Errno values callers test for.
var (
	ErrNoSys  = unix.ENOSYS
	ErrPerm   = unix.EPERM
	ErrAccess = unix.EACCES
	// ErrConnRefused: nobody listens on a socket's address.
	ErrConnRefused = unix.ECONNREFUSED
	ErrNoMem       = unix.ENOMEM
	ErrNoEnt       = unix.ENOENT
	ErrBadFd       = unix.EBADF
	ErrSrch        = unix.ESRCH
	ErrInval       = unix.EINVAL
	ErrExist       = unix.EEXIST
)

// MemfdCreate creates an anonymous shared-memory file. huge asks for
// MFD_HUGETLB (default huge page size). The descriptor is close-on-exec;
// the launcher clears that flag on the copies it hands to PEs via
// os/exec's ExtraFiles.
func MemfdCreate(name string, huge bool) (int, error) {
	flags := unix.MFD_CLOEXEC
	if huge {
		flags |= unix.MFD_HUGETLB
	}
	fd, err := unix.MemfdCreate(name, flags)
	if err != nil {
		return -1, fmt.Errorf("memfd_create(%q): %w", name, err)
	}
	return fd, nil
}

// OpenTmpfile creates an unnamed file in dir (O_TMPFILE, mode 0600):
// nothing is ever visible in the directory, and the file vanishes with
// its last descriptor and mapping.
func OpenTmpfile(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, fmt.Errorf("open(%s, O_TMPFILE): %w", dir, err)
	}
	return fd, nil
}

// OpenExclUnlinked creates path with O_CREAT|O_EXCL and mode 0600 and
// unlinks it at once, returning the descriptor: the last-resort
// fallback when neither memfd_create nor O_TMPFILE is available.
func OpenExclUnlinked(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, fmt.Errorf("open(%s, O_EXCL): %w", path, err)
	}
	if err := unix.Unlink(path); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("unlink(%s): %w", path, err)
	}
	return fd, nil
}

// Ftruncate sets the size of fd.
func Ftruncate(fd int, size int64) error {
	if err := unix.Ftruncate(fd, size); err != nil {
		return fmt.Errorf("ftruncate(%d bytes): %w", size, err)
	}
	return nil
}

// Fallocate reserves backing store for [0, size) of fd, so that later
// page faults cannot fail with SIGBUS.
func Fallocate(fd int, size int64) error {
	if err := unix.Fallocate(fd, 0, 0, size); err != nil {
		return fmt.Errorf("fallocate(%d bytes): %w", size, err)
	}
	return nil
}

// IsBadFD reports whether err says that a descriptor was not open
// (EBADF), as FileSize's error does for such a descriptor.
func IsBadFD(err error) bool { return errors.Is(err, unix.EBADF) }

// IsRegular reports whether fd is a regular file (a memfd or a tmpfs
// file is; a pipe, a socket or a directory is not).
func IsRegular(fd int) (bool, error) {
	st, err := fstat(fd)
	return st.Mode&unix.S_IFMT == unix.S_IFREG, err
}

// fstat is fstat(2), its error naming the descriptor.
func fstat(fd int) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return st, fmt.Errorf("fstat(%d): %w", fd, err)
	}
	return st, nil
}

// FileSize returns the size of the file behind fd.
func FileSize(fd int) (int64, error) {
	st, err := fstat(fd)
	return st.Size, err
}

// FileID returns the device and inode numbers of fd.
func FileID(fd int) (dev, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, fmt.Errorf("fstat(%d): %w", fd, err)
	}
	return st.Dev, st.Ino, nil
}

// Close closes fd.
func Close(fd int) error { return unix.Close(fd) }

// Dup duplicates fd with close-on-exec set.
func Dup(fd int) (int, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("dup(%d): %w", fd, err)
	}
	return nfd, nil
}

// SetCloexec sets or clears FD_CLOEXEC on fd.
func SetCloexec(fd int, on bool) error {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil {
		return err
	}
	if on {
		flags |= unix.FD_CLOEXEC
	} else {
		flags &^= unix.FD_CLOEXEC
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags)
	return err
}

// Mmap maps length bytes of fd at offset, shared and read-write.
// It uses x/sys/unix rather than mmap-go because it needs
// MAP_POPULATE and huge-page aware flags that mmap-go does not expose.
func Mmap(fd int, offset int64, length int, populate bool) ([]byte, error) {
	flags := unix.MAP_SHARED
	if populate {
		flags |= unix.MAP_POPULATE
	}
	b, err := unix.Mmap(fd, offset, length, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return nil, fmt.Errorf("mmap(%d bytes): %w", length, err)
	}
	return b, nil
}

// Munmap unmaps b.
func Munmap(b []byte) error { return unix.Munmap(b) }

// MmapAnon maps length bytes of private anonymous memory, read-write
// and zeroed: memory outside the Go heap (e.g. buffers an RDMA device
// registers, which the Go runtime must never reuse under it).
func MmapAnon(length int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap(%d anonymous bytes): %w", length, err)
	}
	return b, nil
}

// MadviseDontNeed drops the pages of b (they read back as zero for
// anonymous memory; for shared files they are re-read from the file).
func MadviseDontNeed(b []byte) error { return unix.Madvise(b, unix.MADV_DONTNEED) }

// Statfs reports the free and total bytes of the filesystem at path.
func Statfs(path string) (free, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs(%s): %w", path, err)
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

// Getuid returns the real user id.
func Getuid() int { return unix.Getuid() }

// Getpid returns the process id.
func Getpid() int { return unix.Getpid() }

// SchedYield gives the CPU to another runnable thread, if any.
func SchedYield() { unix.RawSyscallNoError(unix.SYS_SCHED_YIELD, 0, 0, 0) }

// futex operations; the shared (non-PRIVATE) forms, because futex words
// live in memory mapped by several processes.
const (
	futexWait = 0
	futexWake = 1
)

// FutexWait sleeps while *addr == val, for at most d (d <= 0: forever).
// Like all futex waits it may return early and spuriously; callers
// re-check their condition. See internal/wait for the contract.
func FutexWait(addr *uint32, val uint32, d time.Duration) {
	var tsp unsafe.Pointer
	var ts unix.Timespec
	if d > 0 {
		ts = unix.NsecToTimespec(int64(d))
		tsp = unsafe.Pointer(&ts)
	}
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val), uintptr(tsp), 0, 0)
}

// FutexWake wakes up to n threads sleeping on addr.
func FutexWake(addr *uint32, n int) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(n), 0, 0, 0)
}

// membarrier commands (linux/membarrier.h).
const (
	membarrierQuery                   = 0
	membarrierGlobalExpedited         = 1 << 1
	membarrierRegisterGlobalExpedited = 1 << 2
)

// MembarrierRegister registers this process for MembarrierGlobal: from
// then on, a MembarrierGlobal in any process makes this process's
// running threads execute a full memory barrier. It fails on kernels
// before 4.16 or where a seccomp filter forbids membarrier.
func MembarrierRegister() error {
	r, _, e := unix.Syscall(unix.SYS_MEMBARRIER, membarrierQuery, 0, 0)
	if e != 0 {
		return fmt.Errorf("membarrier(QUERY): %w", e)
	}
	if r&membarrierGlobalExpedited == 0 {
		return fmt.Errorf("membarrier: MEMBARRIER_CMD_GLOBAL_EXPEDITED not supported (commands %#x)", r)
	}
	if _, _, e := unix.Syscall(unix.SYS_MEMBARRIER, membarrierRegisterGlobalExpedited, 0, 0); e != 0 {
		return fmt.Errorf("membarrier(REGISTER_GLOBAL_EXPEDITED): %w", e)
	}
	return nil
}

// MembarrierGlobal returns when every running thread of every process
// that called MembarrierRegister has executed a full memory barrier
// (an IPI to each CPU running one; threads not running went through a
// context switch, which is one). It is the slow half of an asymmetric
// fence: the other side's stores then need no fence of their own.
func MembarrierGlobal() {
	unix.RawSyscallNoError(unix.SYS_MEMBARRIER, membarrierGlobalExpedited, 0, 0)
}

// PidfdOpen returns a pidfd for pid.
func PidfdOpen(pid int) (int, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1, fmt.Errorf("pidfd_open(%d): %w", pid, err)
	}
	unix.CloseOnExec(fd)
	return fd, nil
}

// PidfdGetfd duplicates descriptor targetfd of the process behind pidfd
// into this process (needs ptrace access to it).
func PidfdGetfd(pidfd, targetfd int) (int, error) {
	fd, err := unix.PidfdGetfd(pidfd, targetfd, 0)
	if err != nil {
		return -1, fmt.Errorf("pidfd_getfd(fd %d): %w", targetfd, err)
	}
	unix.CloseOnExec(fd)
	return fd, nil
}

// PidfdExited reports whether the process behind pidfd has exited.
// It never blocks.
func PidfdExited(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// ProcessAlive reports whether pid exists (kill(pid, 0)).
func ProcessAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// ProcessVMRead copies len(local) bytes from address remote of process
// pid into local (process_vm_readv).
func ProcessVMRead(pid int, local []byte, remote uintptr) error {
	return processVM(pid, local, remote, false)
}

// ProcessVMWrite copies local to address remote of process pid
// (process_vm_writev).
func ProcessVMWrite(pid int, local []byte, remote uintptr) error {
	return processVM(pid, local, remote, true)
}

func processVM(pid int, local []byte, remote uintptr, write bool) error {
	for len(local) > 0 {
		liov := []unix.Iovec{{Base: &local[0]}}
		liov[0].SetLen(len(local))
		riov := []unix.RemoteIovec{{Base: remote, Len: len(local)}}
		var n int
		var err error
		if write {
			n, err = unix.ProcessVMWritev(pid, liov, riov, 0)
		} else {
			n, err = unix.ProcessVMReadv(pid, liov, riov, 0)
		}
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			op := "process_vm_readv"
			if write {
				op = "process_vm_writev"
			}
			return fmt.Errorf("%s(pid %d, %d bytes): %w", op, pid, len(local), err)
		}
		local = local[n:]
		remote += uintptr(n)
	}
	return nil
}

// SetAffinity binds thread or process tid (0: the calling thread) to cpus.
func SetAffinity(tid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		if c < 0 || c >= AffinityCPUs {
			return fmt.Errorf("sched_setaffinity: CPU %d outside [0, %d): %w", c, AffinityCPUs, unix.EINVAL)
		}
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(tid, &set); err != nil {
		return fmt.Errorf("sched_setaffinity(%v): %w", cpus, err)
	}
	return nil
}

// Affinity returns the CPUs tid (0: the calling thread) may run on.
func Affinity(tid int) ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Gettid returns the calling thread's id.
func Gettid() int { return unix.Gettid() }

// SignalName returns the conventional name of signal number sig, e.g.
// "SIGKILL".
func SignalName(sig int) string {
	if n := unix.SignalName(unix.Signal(sig)); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", sig)
}

// FileFromFd wraps fd in an *os.File (for os/exec ExtraFiles).
func FileFromFd(fd int, name string) *os.File { return os.NewFile(uintptr(fd), name) }

// MmapAligned maps length bytes of fd at offset, shared and read-write,
// at an address that is a multiple of align (a power of two). It
// reserves length+align bytes of address space, maps the file over the
// aligned part with MAP_FIXED, and returns the rest of the reservation.
// mmap-go cannot place a mapping, hence x/sys here.
func MmapAligned(fd int, offset int64, length int, align uintptr) ([]byte, error) {
	if length <= 0 || align&(align-1) != 0 {
		return nil, fmt.Errorf("mmap: bad length %d or alignment %d", length, align)
	}
	if align <= uintptr(unix.Getpagesize()) {
		return Mmap(fd, offset, length, false)
	}
	total := uintptr(length) + align
	resv, err := unix.MmapPtr(-1, 0, nil, total, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("mmap: reserving %d bytes of address space: %w", total, err)
	}
	head := (align - uintptr(resv)&(align-1)) & (align - 1)
	at := unsafe.Add(resv, head)
	p, err := unix.MmapPtr(fd, offset, at, uintptr(length), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED)
	if err != nil {
		unix.MunmapPtr(resv, total)
		return nil, fmt.Errorf("mmap(%d bytes, aligned to %d): %w", length, align, err)
	}
	if head > 0 {
		unix.MunmapPtr(resv, head)
	}
	if tail := total - head - uintptr(length); tail > 0 {
		unix.MunmapPtr(unsafe.Add(at, length), tail)
	}
	return unsafe.Slice((*byte)(p), length), nil
}

// MunmapAligned unmaps a mapping made by MmapAligned (x/sys's Munmap
// only knows mappings made by its own Mmap).
func MunmapAligned(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
}
