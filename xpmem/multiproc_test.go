package xpmem_test

// The cross-process tests re-run the test binary as a helper process,
// the way os/exec's tests do: with GO_XPMEM_HELPER=1 in its environment
// TestMain runs helperMain instead of the tests.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/shm"
	"github.com/goshmem/goshmem/xpmem"
)

const (
	helperEnv     = "GO_XPMEM_HELPER"
	permitEnv     = "GO_XPMEM_PERMIT"
	helperSize    = 1 << 16
	helperHalf    = helperSize / 2
	helperSegid   = "segid "
	helperTimeout = 60 * time.Second
)

// The owner writes ownerByte into the first half of the segment, the
// getter replyByte into the second half.
func ownerByte(i int) byte { return byte(i*7 + 3) }
func replyByte(i int) byte { return byte(i*13 + 5) }

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

// helperMain creates a segment, fills its first half with the owner's
// pattern, exports it with the permit in $GO_XPMEM_PERMIT, prints
// "segid ID" and then serves commands read from stdin, one a line,
// answering "ok" or "fail: why":
//
//	check   verify the getter's reply pattern in the second half
//	poke    invert the first half (the getter must see the change)
//	remove  remove the export
//	exit    exit (as does end of input)
func helperMain() int {
	fail := func(format string, args ...any) int {
		fmt.Printf("fail: "+format+"\n", args...)
		return 1
	}
	permit := xpmem.PermitOwner
	if os.Getenv(permitEnv) == "any" {
		permit = xpmem.PermitAny
	}
	seg, err := shm.Create("xpmem-helper", helperSize, shm.Options{})
	if err != nil {
		return fail("%v", err)
	}
	m, err := seg.Map(0, 0)
	if err != nil {
		return fail("%v", err)
	}
	b := m.Bytes()
	for i := range helperHalf {
		b[i] = ownerByte(i)
	}
	exp, err := xpmem.Make(seg, permit)
	if err != nil {
		return fail("%v", err)
	}
	seg.Close() // the export and the mapping keep the memory
	fmt.Printf("%s%s\n", helperSegid, exp.ID())

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch cmd := in.Text(); cmd {
		case "check":
			bad := -1
			for i := range helperHalf {
				if b[helperHalf+i] != replyByte(i) {
					bad = i
					break
				}
			}
			if bad >= 0 {
				fmt.Printf("fail: reply byte %d is %d, want %d\n", bad, b[helperHalf+bad], replyByte(bad))
				continue
			}
			fmt.Println("ok")
		case "poke":
			for i := range helperHalf {
				b[i] = ^ownerByte(i)
			}
			fmt.Println("ok")
		case "remove":
			if err := exp.Remove(); err != nil {
				fmt.Printf("fail: %v\n", err)
				continue
			}
			fmt.Println("ok")
		case "exit":
			return 0
		default:
			fmt.Printf("fail: unknown command %q\n", cmd)
		}
	}
	return 0
}

// helper is a running helper process.
type helper struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	raw *os.File
	id  xpmem.Segid
}

// startHelper starts exe as a helper exporting with permit; cred, if
// not nil, is the identity to run it as.
func startHelper(t *testing.T, exe string, permit xpmem.Permit, cred *syscall.Credential) *helper {
	t.Helper()
	cmd := exec.Command(exe)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), helperEnv+"=1", permitEnv+"="+permit.String())
	cmd.Stderr = os.Stderr
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		// Coverage output would not be writable by the helper's user.
		cmd.Env = append(cmd.Env, "GOCOVERDIR=")
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting helper: %v", err)
	}
	h := &helper{t: t, cmd: cmd, in: in, out: bufio.NewReader(out)}
	h.raw, _ = out.(*os.File)
	t.Cleanup(func() {
		in.Close()
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line := h.line()
	s, ok := strings.CutPrefix(line, helperSegid)
	if !ok {
		t.Fatalf("helper said %q, want %q...", line, helperSegid)
	}
	if h.id, err = xpmem.ParseSegid(s); err != nil {
		t.Fatal(err)
	}
	if int(h.id.Pid) != cmd.Process.Pid || h.id.Permit != permit {
		t.Fatalf("helper %d exported %+v", cmd.Process.Pid, h.id)
	}
	return h
}

// line reads a line from the helper.
func (h *helper) line() string {
	h.t.Helper()
	if h.raw != nil {
		h.raw.SetReadDeadline(time.Now().Add(helperTimeout))
	}
	s, err := h.out.ReadString('\n')
	if err != nil {
		h.t.Fatalf("reading from helper: %v (got %q)", err, s)
	}
	return strings.TrimSuffix(s, "\n")
}

// do sends a command and expects "ok".
func (h *helper) do(cmd string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, cmd+"\n"); err != nil {
		h.t.Fatalf("sending %q to helper: %v", cmd, err)
	}
	if got := h.line(); got != "ok" {
		h.t.Fatalf("helper answered %q to %q", got, cmd)
	}
}

// exit tells the helper to exit and waits until it has (without
// reaping it).
func (h *helper) exit() {
	h.t.Helper()
	pidfd, err := sys.PidfdOpen(h.cmd.Process.Pid)
	if err != nil {
		h.t.Fatal(err)
	}
	defer sys.Close(pidfd)
	io.WriteString(h.in, "exit\n")
	h.in.Close()
	for deadline := time.Now().Add(helperTimeout); !sys.PidfdExited(pidfd); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			h.t.Fatal("helper did not exit")
		}
	}
}

func testExe(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot find the test binary to run as a helper: %v", err)
	}
	return exe
}

func TestCrossProcess(t *testing.T) {
	h := startHelper(t, testExe(t), xpmem.PermitOwner, nil)
	id := h.id

	a, err := xpmem.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if a.Size() != helperSize {
		t.Fatalf("Size() = %d, want %d", a.Size(), helperSize)
	}
	own := attach(t, a, 0, helperHalf)
	for i, c := range own.Bytes() {
		if c != ownerByte(i) {
			t.Fatalf("owner byte %d is %d, want %d", i, c, ownerByte(i))
		}
	}
	// An unaligned attachment sees the same bytes.
	odd := attach(t, a, 4097, 300)
	for i, c := range odd.Bytes() {
		if c != ownerByte(4097+i) {
			t.Fatalf("unaligned attachment: byte %d is %d, want %d", 4097+i, c, ownerByte(4097+i))
		}
	}

	// The other direction: the helper checks what we write.
	reply := attach(t, a, helperHalf, helperHalf)
	for i := range reply.Bytes() {
		reply.Bytes()[i] = replyByte(i)
	}
	h.do("check")

	// Live sharing, not a copy: the helper's later stores show up.
	h.do("poke")
	for i, c := range own.Bytes() {
		if c != ^ownerByte(i) {
			t.Fatalf("after poke, owner byte %d is %d, want %d", i, c, ^ownerByte(i))
		}
	}

	// A descriptor number of the helper's that is open on another file
	// (its stdin pipe) is not the segment.
	forged := id
	forged.Fd = 0
	_, err = xpmem.Get(forged)
	wantErr(t, "Get of the helper's stdin", err, xpmem.ErrRemoved)
	forged.Fd = 1 << 20
	_, err = xpmem.Get(forged)
	wantErr(t, "Get of a closed descriptor", err, xpmem.ErrRemoved)

	// Release keeps attachments; a second access still works before Remove.
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	get(t, id).Release()

	h.do("remove")
	_, err = xpmem.Get(id)
	wantErr(t, "Get after the owner's Remove", err, xpmem.ErrRemoved)
	if own.Bytes()[0] != ^ownerByte(0) {
		t.Fatal("attachment lost after Remove")
	}

	// Exited but not yet reaped (a zombie), then gone.
	h.exit()
	_, err = xpmem.Get(id)
	wantErr(t, "Get from an exited owner", err, xpmem.ErrNoProcess)
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	_, err = xpmem.Get(id)
	wantErr(t, "Get from a reaped owner", err, xpmem.ErrNoProcess)

	// The memory outlives its owner while we map it.
	if own.Bytes()[1] != ^ownerByte(1) || reply.Bytes()[1] != replyByte(1) {
		t.Fatal("attachment lost after the owner exited")
	}
}

// TestExitWithoutRemove checks that an owner's exit ends its exports
// even if they were never removed.
func TestExitWithoutRemove(t *testing.T) {
	h := startHelper(t, testExe(t), xpmem.PermitAny, nil)
	get(t, h.id)
	h.exit()
	h.cmd.Wait()
	_, err := xpmem.Get(h.id)
	wantErr(t, "Get after exit", err, xpmem.ErrNoProcess)
}

// nobody is the identity foreign helpers run as.
var nobody = &syscall.Credential{Uid: 65534, Gid: 65534}

// worldExe copies the test binary where uid 65534 can run it (go test's
// build directory is private to its user).
func worldExe(t *testing.T) string {
	exe := testExe(t)
	dir, err := os.MkdirTemp("", "xpmem-helper-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "xpmem.test")
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestForeign(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to start a helper as uid 65534 (another user)")
	}
	exe := worldExe(t)

	t.Run("owner", func(t *testing.T) {
		h := startHelper(t, exe, xpmem.PermitOwner, nobody)
		_, err := xpmem.Get(h.id)
		wantErr(t, "root's Get of uid 65534's PermitOwner segment", err, xpmem.ErrForeign)
		if errors.Is(err, xpmem.ErrRemoved) || errors.Is(err, xpmem.ErrNoProcess) {
			t.Fatalf("error %v wraps more than ErrForeign", err)
		}
		// The refusal is a permit check, not a stale id: the helper is
		// fine, and refuses again after Remove for the same reason.
		h.do("remove")
		_, err = xpmem.Get(h.id)
		wantErr(t, "Get after Remove", err, xpmem.ErrForeign)
	})

	t.Run("any", func(t *testing.T) {
		h := startHelper(t, exe, xpmem.PermitAny, nobody)
		a, err := xpmem.Get(h.id)
		if errors.Is(err, xpmem.ErrForeign) {
			t.Skipf("the kernel refused root access to uid 65534's descriptors (no CAP_SYS_PTRACE?): %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer a.Release()
		m := attach(t, a, 0, helperSize)
		for i := range helperHalf {
			if m.Bytes()[i] != ownerByte(i) {
				t.Fatalf("owner byte %d is %d, want %d", i, m.Bytes()[i], ownerByte(i))
			}
			m.Bytes()[helperHalf+i] = replyByte(i)
		}
		h.do("check")
	})
}
