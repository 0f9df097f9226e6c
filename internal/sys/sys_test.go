package sys_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/sys"
)

func memfd(t *testing.T, size int64) int {
	t.Helper()
	fd, err := sys.MemfdCreate("systest", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close(fd) })
	if err := sys.Ftruncate(fd, size); err != nil {
		t.Fatal(err)
	}
	return fd
}

func cloexec(t *testing.T, fd int) bool {
	t.Helper()
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil {
		t.Fatalf("F_GETFD %d: %v", fd, err)
	}
	return flags&unix.FD_CLOEXEC != 0
}

func TestMemfdFtruncateFileSize(t *testing.T) {
	fd, err := sys.MemfdCreate("systest-size", false)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(fd)
	if !cloexec(t, fd) {
		t.Error("memfd is not close-on-exec")
	}
	if target, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); target != "/memfd:systest-size (deleted)" {
		t.Errorf("memfd target = %q", target)
	}
	for _, size := range []int64{0, 1, 4096, 12345, 1 << 30} {
		if err := sys.Ftruncate(fd, size); err != nil {
			t.Fatalf("Ftruncate(%d): %v", size, err)
		}
		got, err := sys.FileSize(fd)
		if err != nil || got != size {
			t.Fatalf("FileSize after Ftruncate(%d) = %d, %v", size, got, err)
		}
	}
	if err := sys.Ftruncate(fd, -1); err == nil || !strings.Contains(err.Error(), "ftruncate(-1 bytes)") || !errors.Is(err, sys.ErrInval) {
		t.Errorf("Ftruncate(-1) = %v, want an EINVAL naming the size", err)
	}
	if _, err := sys.FileSize(-1); err == nil || !errors.Is(err, sys.ErrBadFd) {
		t.Errorf("FileSize(-1) = %v, want EBADF", err)
	}
	if err := sys.Fallocate(fd, 8192); err != nil {
		t.Errorf("Fallocate on a memfd: %v", err)
	}
}

func TestMmapShared(t *testing.T) {
	const size = 3 * 4096
	fd := memfd(t, size)
	a, err := sys.Mmap(fd, 0, size, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(a)
	b, err := sys.Mmap(fd, 0, size, true)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(b)
	c, err := sys.Mmap(fd, 4096, 4096, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != size || len(b) != size || len(c) != 4096 {
		t.Fatalf("lengths %d %d %d", len(a), len(b), len(c))
	}
	if &a[0] == &b[0] {
		t.Fatal("two mappings at one address")
	}
	for i := range a {
		a[i] = byte(i * 7)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("the second mapping does not see the first one's writes")
	}
	c[1] = 0xaa
	if a[4097] != 0xaa || b[4097] != 0xaa {
		t.Fatal("an offset mapping is not the second page")
	}
	if err := sys.Munmap(c); err != nil {
		t.Fatalf("Munmap: %v", err)
	}
	// The shared file keeps the data when a mapping drops its pages.
	if err := sys.MadviseDontNeed(b); err != nil {
		t.Fatal(err)
	}
	last := size - 1
	if b[4097] != 0xaa || b[last] != byte(last*7) {
		t.Fatal("MADV_DONTNEED lost data of a shared file mapping")
	}
	if _, err := sys.Mmap(fd, 1, 4096, false); err == nil || !errors.Is(err, sys.ErrInval) {
		t.Errorf("Mmap at an unaligned offset = %v, want EINVAL", err)
	}
	if _, err := sys.Mmap(-1, 0, 4096, false); err == nil || !strings.Contains(err.Error(), "mmap(4096 bytes)") {
		t.Errorf("Mmap(-1) = %v, want an error naming the length", err)
	}
	if align, err := sys.MmapAlignment(fd); err != nil || align != int64(os.Getpagesize()) {
		t.Errorf("MmapAlignment(memfd) = %d, %v; want the page size", align, err)
	}
}

func TestDupCloexecFileID(t *testing.T) {
	fd := memfd(t, 4096)
	d, err := sys.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(d)
	if d == fd || !cloexec(t, d) {
		t.Fatalf("Dup = %d (cloexec %v)", d, cloexec(t, d))
	}
	dev1, ino1, err1 := sys.FileID(fd)
	dev2, ino2, err2 := sys.FileID(d)
	if err1 != nil || err2 != nil || dev1 != dev2 || ino1 != ino2 || ino1 == 0 {
		t.Fatalf("FileID: %d/%d %v vs %d/%d %v", dev1, ino1, err1, dev2, ino2, err2)
	}
	other := memfd(t, 4096)
	if _, ino3, _ := sys.FileID(other); ino3 == ino1 {
		t.Error("two memfds share an inode number")
	}
	if err := sys.SetCloexec(d, false); err != nil || cloexec(t, d) {
		t.Fatalf("SetCloexec(false): %v, still %v", err, cloexec(t, d))
	}
	if err := sys.SetCloexec(d, true); err != nil || !cloexec(t, d) {
		t.Fatalf("SetCloexec(true): %v, still %v", err, cloexec(t, d))
	}
	if err := sys.SetCloexec(-1, true); err == nil {
		t.Error("SetCloexec(-1) succeeded")
	}
	if _, err := sys.Dup(-1); err == nil || !strings.Contains(err.Error(), "dup(-1)") {
		t.Errorf("Dup(-1) = %v", err)
	}
	f := sys.FileFromFd(d, "named")
	if f.Name() != "named" || int(f.Fd()) != d {
		t.Errorf("FileFromFd = %q fd %d", f.Name(), f.Fd())
	}
}

func TestOpenTmpfile(t *testing.T) {
	dir := "/dev/shm"
	if _, err := os.Stat(dir); err != nil {
		dir = t.TempDir()
	}
	before, _ := os.ReadDir(dir)
	fd, err := sys.OpenTmpfile(dir)
	if errors.Is(err, sys.ErrNoSys) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) {
		t.Skipf("%s does not support O_TMPFILE: %v", dir, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(fd)
	if !cloexec(t, fd) {
		t.Error("tmpfile is not close-on-exec")
	}
	target, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if !strings.HasSuffix(target, " (deleted)") {
		t.Errorf("O_TMPFILE target %q has a name", target)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&0o777 != 0o600 {
		t.Errorf("tmpfile mode %o (%v), want 0600", st.Mode&0o777, err)
	}
	after, _ := os.ReadDir(dir)
	if len(after) > len(before) {
		for _, e := range after {
			if strings.HasPrefix(e.Name(), "#") {
				t.Errorf("O_TMPFILE made %s/%s visible", dir, e.Name())
			}
		}
	}
	if _, err := sys.OpenTmpfile("/nonexistent-goshmem"); err == nil || !strings.Contains(err.Error(), "/nonexistent-goshmem") {
		t.Errorf("OpenTmpfile(missing dir) = %v", err)
	}
}

func TestOpenExclUnlinked(t *testing.T) {
	for _, dir := range []string{t.TempDir(), "/dev/shm"} {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		path := filepath.Join(dir, "goshmem-systest-"+strconv.Itoa(os.Getpid()))
		fd, err := sys.OpenExclUnlinked(path)
		if err != nil {
			t.Fatalf("OpenExclUnlinked(%s): %v", path, err)
		}
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after OpenExclUnlinked: %v", path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Nlink != 0 || st.Mode&0o777 != 0o600 {
			t.Errorf("fstat: nlink %d mode %o (%v); want 0, 0600", st.Nlink, st.Mode&0o777, err)
		}
		if !cloexec(t, fd) {
			t.Error("not close-on-exec")
		}
		// The path is free again: a second call succeeds.
		fd2, err := sys.OpenExclUnlinked(path)
		if err != nil {
			t.Fatalf("second OpenExclUnlinked(%s): %v", path, err)
		}
		if _, ino1, _ := sys.FileID(fd); true {
			if _, ino2, _ := sys.FileID(fd2); ino1 == ino2 {
				t.Error("the second call returned the same file")
			}
		}
		sys.Close(fd2)
		sys.Close(fd)
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after both calls", path)
		}

		// An existing file is never opened or removed.
		if err := os.WriteFile(path, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		if fd, err := sys.OpenExclUnlinked(path); err == nil {
			sys.Close(fd)
			t.Errorf("OpenExclUnlinked opened the existing %s", path)
		} else if !errors.Is(err, sys.ErrExist) || !strings.Contains(err.Error(), path) {
			t.Errorf("OpenExclUnlinked(existing) = %v, want EEXIST naming the path", err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != "keep" {
			t.Errorf("the existing file was touched: %q, %v", b, err)
		}
		os.Remove(path)
	}
}

func TestStatfs(t *testing.T) {
	free, total, err := sys.Statfs(os.TempDir())
	if err != nil || total == 0 || free > total {
		t.Fatalf("Statfs = %d free of %d, %v", free, total, err)
	}
	if _, _, err := sys.Statfs("/nonexistent-goshmem"); err == nil || !errors.Is(err, sys.ErrNoEnt) {
		t.Errorf("Statfs(missing) = %v", err)
	}
}

func TestIDs(t *testing.T) {
	if sys.Getpid() != os.Getpid() || sys.Getuid() != os.Getuid() {
		t.Fatalf("Getpid/Getuid = %d/%d, want %d/%d", sys.Getpid(), sys.Getuid(), os.Getpid(), os.Getuid())
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if sys.Gettid() != unix.Gettid() || sys.Gettid() <= 0 {
		t.Fatal("Gettid")
	}
}

func TestFutexWaitTimeout(t *testing.T) {
	w := new(uint32)
	for _, d := range []time.Duration{20 * time.Millisecond, 50 * time.Millisecond} {
		// A futex wait may return early (a signal: the Go runtime's
		// preemption signals come often under -race), as its contract
		// says, so the caller loops until its deadline. A wait that
		// really sleeps needs a few calls; one that returned at once
		// would need thousands (a system call takes about a
		// microsecond). No call may sleep past its timeout.
		start, calls := time.Now(), 0
		for time.Since(start) < d {
			t0 := time.Now()
			sys.FutexWait(w, 0, d)
			calls++
			if el := time.Since(t0); el > d+time.Second {
				t.Errorf("FutexWait(timeout %v) with nobody waking returned after %v", d, el)
			}
		}
		if calls > 200 {
			t.Errorf("FutexWait(timeout %v) with nobody waking: %d calls to last %v (it does not sleep)", d, calls, d)
		}
	}
	// A word that already differs returns at once.
	*w = 1
	start := time.Now()
	sys.FutexWait(w, 0, 5*time.Second)
	if el := time.Since(start); el > time.Second {
		t.Errorf("FutexWait on a changed word slept %v", el)
	}
	// Waking nobody is harmless.
	sys.FutexWake(w, 1)
}

// threadInFutex reports whether thread tid of this process is blocked
// in the futex system call.
func threadInFutex(tid int) (bool, error) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/syscall")
	if err != nil {
		return false, err
	}
	f := strings.Fields(string(b))
	return len(f) > 0 && f[0] == strconv.Itoa(unix.SYS_FUTEX), nil
}

func TestFutexWake(t *testing.T) {
	w := new(uint32)
	tids := make(chan int)
	woke := make(chan time.Time)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- sys.Gettid()
		for atomic.LoadUint32(w) == 0 {
			sys.FutexWait(w, 0, 10*time.Second)
		}
		woke <- time.Now()
	}()
	tid := <-tids
	// Wait until the thread is in futex_wait.
	deadline := time.Now().Add(5 * time.Second)
	for {
		in, err := threadInFutex(tid)
		if err != nil {
			t.Logf("cannot see the waiter's system call (%v); sleeping instead", err)
			time.Sleep(20 * time.Millisecond)
			break
		}
		if in {
			time.Sleep(time.Millisecond)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter never entered futex_wait")
		}
		time.Sleep(100 * time.Microsecond)
	}
	atomic.StoreUint32(w, 1)
	sys.FutexWake(w, 1)
	wakeAt := time.Now()
	select {
	case at := <-woke:
		if lat := at.Sub(wakeAt); lat > time.Second {
			t.Fatalf("the waiter woke %v after FutexWake (its timeout is 10s)", lat)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("FutexWake did not wake the waiter")
	}
}

func TestFutexSharedAcrossMappings(t *testing.T) {
	// The futex ops are the shared forms: a waiter on one mapping of a
	// file is woken through another mapping of it.
	fd := memfd(t, 4096)
	a, err := sys.Mmap(fd, 0, 4096, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(a)
	b, err := sys.Mmap(fd, 0, 4096, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(b)
	wa := (*uint32)(unsafe.Pointer(&a[64]))
	wb := (*uint32)(unsafe.Pointer(&b[64]))
	tids := make(chan int)
	woke := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- sys.Gettid()
		for atomic.LoadUint32(wa) == 0 {
			sys.FutexWait(wa, 0, 10*time.Second)
		}
		close(woke)
	}()
	tid := <-tids
	for i := 0; i < 50000; i++ {
		if in, err := threadInFutex(tid); err != nil || in {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	time.Sleep(time.Millisecond)
	atomic.StoreUint32(wb, 1)
	sys.FutexWake(wb, 1)
	select {
	case <-woke:
	case <-time.After(3 * time.Second):
		t.Fatal("a wake through a second mapping did not reach the waiter")
	}
}

func TestPidfd(t *testing.T) {
	// A child that lives until its stdin closes.
	cmd := exec.Command("cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start cat: %v", err)
	}
	pid := cmd.Process.Pid
	pfd, err := sys.PidfdOpen(pid)
	if errors.Is(err, sys.ErrNoSys) {
		stdin.Close()
		cmd.Wait()
		t.Skip("no pidfd_open in this kernel")
	}
	if err != nil {
		stdin.Close()
		cmd.Wait()
		t.Fatal(err)
	}
	defer sys.Close(pfd)
	if !cloexec(t, pfd) {
		t.Error("pidfd is not close-on-exec")
	}
	if sys.PidfdExited(pfd) {
		t.Error("PidfdExited = true for a running child")
	}
	if !sys.ProcessAlive(pid) {
		t.Error("ProcessAlive = false for a running child")
	}
	stdin.Close()
	if err := sys.WaitExited(pid); err != nil {
		t.Fatalf("WaitExited: %v", err)
	}
	if !sys.PidfdExited(pfd) {
		t.Error("PidfdExited = false after the child exited")
	}
	// WaitExited did not reap: Wait still gets the status.
	if err := cmd.Wait(); err != nil {
		t.Fatalf("Wait after WaitExited: %v", err)
	}
	if code, sig := sys.ExitStatus(cmd.ProcessState); code != 0 || sig != 0 {
		t.Errorf("ExitStatus = %d, %d; want 0, 0", code, sig)
	}
	if !sys.PidfdExited(pfd) {
		t.Error("PidfdExited = false after the child was reaped")
	}

	// "true" exits at once.
	tr := exec.Command("true")
	if err := tr.Start(); err != nil {
		t.Skipf("cannot start true: %v", err)
	}
	tfd, err := sys.PidfdOpen(tr.Process.Pid)
	if err != nil {
		tr.Wait()
		t.Fatal(err)
	}
	defer sys.Close(tfd)
	if err := tr.Wait(); err != nil {
		t.Fatal(err)
	}
	if !sys.PidfdExited(tfd) {
		t.Error("PidfdExited = false after true exited")
	}
	if _, err := sys.PidfdOpen(tr.Process.Pid); err == nil {
		t.Log("pidfd_open on a reaped pid succeeded (pid reused?)")
	} else if !errors.Is(err, sys.ErrSrch) || !strings.Contains(err.Error(), "pidfd_open("+strconv.Itoa(tr.Process.Pid)+")") {
		t.Errorf("PidfdOpen(reaped) = %v, want ESRCH naming the pid", err)
	}
}

func TestPidfdGetfd(t *testing.T) {
	pfd, err := sys.PidfdOpen(os.Getpid())
	if err != nil {
		t.Skip(err)
	}
	defer sys.Close(pfd)
	fd := memfd(t, 12345)
	got, err := sys.PidfdGetfd(pfd, fd)
	if errors.Is(err, sys.ErrPerm) || errors.Is(err, sys.ErrNoSys) {
		t.Skipf("pidfd_getfd not allowed here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(got)
	if size, _ := sys.FileSize(got); size != 12345 || !cloexec(t, got) {
		t.Errorf("pidfd_getfd copy: size %d cloexec %v", size, cloexec(t, got))
	}
}

func TestExitStatusAndKill(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	cases := []struct {
		script    string
		code, sig int
	}{
		{"exit 0", 0, 0},
		{"exit 3", 3, 0},
		{"kill -KILL $$", -1, sys.SIGKILL},
		{"kill -TERM $$", -1, sys.SIGTERM},
	}
	for _, c := range cases {
		cmd := exec.Command("sh", "-c", c.script)
		cmd.Run()
		if code, sig := sys.ExitStatus(cmd.ProcessState); code != c.code || sig != c.sig {
			t.Errorf("ExitStatus(sh -c %q) = %d, %d; want %d, %d", c.script, code, sig, c.code, c.sig)
		}
	}

	// KillGroup reaches a child in its own process group.
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = sys.ChildAttr()
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	if err := sys.KillGroup(cmd.Process.Pid, sys.SIGTERM); err != nil {
		cmd.Process.Kill()
		t.Fatalf("KillGroup: %v", err)
	}
	cmd.Wait()
	if code, sig := sys.ExitStatus(cmd.ProcessState); sig != sys.SIGTERM {
		t.Errorf("after KillGroup(SIGTERM): ExitStatus = %d, %d", code, sig)
	}
	for _, pg := range []int{0, -1} {
		if err := sys.KillGroup(pg, sys.SIGTERM); !errors.Is(err, sys.ErrInval) {
			t.Errorf("KillGroup(%d) = %v, want EINVAL", pg, err)
		}
	}
	if attr := sys.ChildAttr(); !attr.Setpgid || attr.Pdeathsig != syscall.SIGKILL {
		t.Errorf("ChildAttr = %+v", attr)
	}
}

func TestProcessVMOwnPid(t *testing.T) {
	src := []byte("hello, process_vm_readv")
	dst := make([]byte, len(src))
	err := sys.ProcessVMRead(os.Getpid(), dst, uintptr(unsafe.Pointer(&src[0])))
	if errors.Is(err, sys.ErrNoSys) || errors.Is(err, sys.ErrPerm) {
		t.Skipf("process_vm_readv unavailable: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst, src) {
		t.Fatalf("read %q, want %q", dst, src)
	}
	target := make([]byte, 16)
	if err := sys.ProcessVMWrite(os.Getpid(), []byte("written"), uintptr(unsafe.Pointer(&target[4]))); err != nil {
		t.Fatal(err)
	}
	if string(target[4:11]) != "written" || target[3] != 0 || target[11] != 0 {
		t.Fatalf("target = %q", target)
	}
	runtime.KeepAlive(src)
	runtime.KeepAlive(target)

	// Large transfers (more than one page, into shared memory).
	fd := memfd(t, 1<<20)
	m, err := sys.Mmap(fd, 0, 1<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Munmap(m)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	if err := sys.ProcessVMWrite(os.Getpid(), big, uintptr(unsafe.Pointer(&m[0]))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m, big) {
		t.Fatal("1 MiB process_vm_writev differs")
	}
	back := make([]byte, len(big))
	if err := sys.ProcessVMRead(os.Getpid(), back, uintptr(unsafe.Pointer(&m[0]))); err != nil || !bytes.Equal(back, big) {
		t.Fatalf("1 MiB process_vm_readv: %v", err)
	}

	// Nothing to copy is not an error.
	if err := sys.ProcessVMRead(os.Getpid(), nil, 0); err != nil {
		t.Errorf("empty read: %v", err)
	}
	// A bad address is an error that says what failed.
	err = sys.ProcessVMRead(os.Getpid(), dst, 8)
	if err == nil || !errors.Is(err, unix.EFAULT) || !strings.Contains(err.Error(), "process_vm_readv(pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("read from address 8 = %v, want EFAULT naming the call and pid", err)
	}
	err = sys.ProcessVMWrite(os.Getpid(), dst, 8)
	if err == nil || !strings.Contains(err.Error(), "process_vm_writev") {
		t.Errorf("write to address 8 = %v", err)
	}
}

func TestAffinity(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpus, err := sys.Affinity(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) == 0 {
		t.Fatal("Affinity(0) is empty")
	}
	for i, c := range cpus {
		if c < 0 || c >= sys.AffinityCPUs || (i > 0 && c <= cpus[i-1]) {
			t.Fatalf("Affinity(0) = %v: not sorted, or out of [0, %d)", cpus, sys.AffinityCPUs)
		}
	}
	if sys.AffinityCPUs != 1024 {
		t.Errorf("AffinityCPUs = %d, want 1024", sys.AffinityCPUs)
	}
	// Bind this thread to its first CPU and back.
	if err := sys.SetAffinity(0, cpus[:1]); err != nil {
		t.Fatal(err)
	}
	one, err := sys.Affinity(0)
	if err != nil || len(one) != 1 || one[0] != cpus[0] {
		t.Errorf("after SetAffinity(%v): %v, %v", cpus[:1], one, err)
	}
	if err := sys.SetAffinity(0, cpus); err != nil {
		t.Fatal(err)
	}
	again, _ := sys.Affinity(0)
	if len(again) != len(cpus) {
		t.Errorf("restoring affinity: %v, want %v", again, cpus)
	}
	if err := sys.SetAffinity(0, nil); err == nil || !errors.Is(err, sys.ErrInval) {
		t.Errorf("SetAffinity(no CPUs) = %v, want EINVAL", err)
	}
}

func TestSignals(t *testing.T) {
	names := []struct {
		sig  int
		want string
	}{
		{9, "SIGKILL"},
		{sys.SIGKILL, "SIGKILL"},
		{sys.SIGTERM, "SIGTERM"},
		{sys.SIGINT, "SIGINT"},
		{sys.SIGHUP, "SIGHUP"},
		{11, "SIGSEGV"},
		{6, "SIGABRT"},
		{0, "signal 0"},
		{999, "signal 999"},
		{-1, "signal -1"},
	}
	for _, c := range names {
		if got := sys.SignalName(c.sig); got != c.want {
			t.Errorf("SignalName(%d) = %q, want %q", c.sig, got, c.want)
		}
	}
	if sys.SIGKILL != 9 || sys.SIGTERM != 15 || sys.SIGINT != 2 || sys.SIGHUP != 1 {
		t.Error("signal constants")
	}
	if sys.SignalNumber(os.Interrupt) != 2 || sys.SignalNumber(syscall.SIGTERM) != 15 || sys.SignalNumber(os.Kill) != 9 {
		t.Error("SignalNumber")
	}
	if sys.Signal(9) != syscall.SIGKILL || sys.SignalNumber(sys.Signal(15)) != 15 {
		t.Error("Signal")
	}
	if !sys.ProcessAlive(os.Getpid()) {
		t.Error("ProcessAlive(self) = false")
	}
	if sys.ProcessAlive(1 << 30) {
		t.Error("ProcessAlive(2^30) = true")
	}
}

// SetAffinity can name CPUs 0 to AffinityCPUs-1 only; any other number
// must be an error, not a panic, a silently dropped CPU, or a different
// CPU (unix.CPUSet.Set maps -1 to bit 63 of word 0, and indexes word -1
// for -64).
func TestSetAffinityOutOfRange(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := sys.Affinity(0)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.SetAffinity(0, orig)
	cases := [][]int{
		{-1},
		{-64},
		{orig[0], sys.AffinityCPUs},
		{orig[0], -1},
	}
	for _, cpus := range cases {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("SetAffinity(0, %v) panicked: %v", cpus, r)
				}
			}()
			err := sys.SetAffinity(0, cpus)
			got, _ := sys.Affinity(0)
			if err == nil {
				t.Errorf("SetAffinity(0, %v) succeeded and bound the thread to %v", cpus, got)
			}
			sys.SetAffinity(0, orig)
		}()
	}
}
