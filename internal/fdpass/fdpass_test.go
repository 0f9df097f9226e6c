package fdpass

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Variables that make the test binary a member process.
const (
	memberVar = "GOSHMEM_FDPASS_MEMBER" // socket name
	rankVar   = "GOSHMEM_FDPASS_RANK"
	leaderVar = "GOSHMEM_FDPASS_LEADER" // leader pid
	claimVar  = "GOSHMEM_FDPASS_CLAIM"  // rank to claim in the hello (a stranger)
	delayVar  = "GOSHMEM_FDPASS_DELAY"  // wait this long before connecting
	fdsVar    = "GOSHMEM_FDPASS_FDS"    // the leader's descriptors, for Fetch when unreachable
)

func TestMain(m *testing.M) {
	if name := os.Getenv(memberVar); name != "" {
		os.Exit(member(name))
	}
	os.Exit(m.Run())
}

// member is a member process: it takes two descriptors and prints what
// it reads from the first at offset 0.
func member(name string) int {
	rank, _ := strconv.Atoi(os.Getenv(rankVar))
	leader, _ := strconv.Atoi(os.Getenv(leaderVar))
	if c := os.Getenv(claimVar); c != "" {
		rank, _ = strconv.Atoi(c)
	}
	if d, err := time.ParseDuration(os.Getenv(delayVar)); err == nil {
		time.Sleep(d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fds := os.Getenv(fdsVar)
	start := time.Now()
	files, err := Take(ctx, name, rank, leader, 2, fds != "")
	how := "socket"
	if errors.Is(err, ErrUnreachable) {
		if took := time.Since(start); took > time.Second {
			fmt.Fprintf(os.Stderr, "ErrUnreachable after %v\n", took)
			return 1
		}
		var list []int
		for _, f := range strings.Split(fds, ",") {
			n, _ := strconv.Atoi(f)
			list = append(list, n)
		}
		files, err = Fetch(leader, list)
		how = "fetched"
		if err == nil {
			files[1].WriteAt([]byte("took"), 0) // tells the leader (Serve's took)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if how != "socket" {
		fmt.Printf("%s: ", how)
	}
	b := make([]byte, 16)
	n, _ := files[0].ReadAt(b, 0)
	fmt.Printf("rank %d read %q\n", rank, b[:n])
	return 0
}

func token(t testing.TB) string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// memfd returns a memfd holding s.
func memfd(t testing.TB, s string) *os.File {
	fd, err := unix.MemfdCreate("fdpass-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Skipf("memfd_create: %v", err)
	}
	f := os.NewFile(uintptr(fd), "memfd")
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestName(t *testing.T) {
	if got := Name("seg", "job;1/2", "ab c"); got != "goshmem-seg-job_1_2-ab_c" {
		t.Errorf("Name = %q", got)
	}
}

// TestInProcess: a leader and three member goroutines of this process;
// each member reads what the leader wrote through its own descriptor.
func TestInProcess(t *testing.T) {
	name := Name("test", "1", token(t))
	l := listen(t, name)
	files := []*os.File{memfd(t, "control"), memfd(t, "heaps")}
	members := map[int]int{1: os.Getpid(), 2: os.Getpid(), 3: os.Getpid()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for r := 1; r <= 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := Take(ctx, name, r, os.Getpid(), 2, false)
			if err != nil {
				errs[r] = err
				return
			}
			defer got[0].Close()
			defer got[1].Close()
			b := make([]byte, 7)
			got[1].ReadAt(b[:5], 0)
			got[0].ReadAt(b, 0)
			if string(b) != "control" {
				errs[r] = fmt.Errorf("read %q through the first descriptor", b)
			}
		}()
	}
	if _, err := l.Serve(ctx, members, files, nil); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// startMember runs the test binary as a member process.
func startMember(t *testing.T, name string, rank int, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memberVar+"="+name, rankVar+"="+strconv.Itoa(rank), leaderVar+"="+strconv.Itoa(os.Getpid()))
	cmd.Env = append(cmd.Env, env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// TestProcesses: members in other processes receive the descriptors and
// see the leader's data; a stranger (a process whose pid is not the one
// published for the rank it claims) is rejected, and the member it
// impersonates is still served.
func TestProcesses(t *testing.T) {
	name := Name("test", "2", token(t))
	l := listen(t, name)
	files := []*os.File{memfd(t, "shared!"), memfd(t, "h")}
	var cmds []*exec.Cmd
	members := map[int]int{}
	for r := 1; r <= 2; r++ {
		c := startMember(t, name, r, delayVar+"=500ms")
		cmds = append(cmds, c)
		members[r] = c.Process.Pid
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	served := make(chan error, 1)
	go func() { _, err := l.Serve(ctx, members, files, nil); served <- err }()
	start := time.Now()
	stranger := startMember(t, name, 9, claimVar+"=1")
	stranger.Wait()
	if took := time.Since(start); stranger.ProcessState.Success() || took > 400*time.Millisecond {
		t.Errorf("the stranger claiming rank 1: success %v after %v, want a refusal at once; stdout %q", stranger.ProcessState.Success(), took, stranger.Stdout.(*strings.Builder).String())
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	for i, c := range cmds {
		c.Wait()
		if out := c.Stdout.(*strings.Builder).String(); out != fmt.Sprintf("rank %d read %q\n", i+1, "shared!") {
			t.Errorf("member %d: stdout %q stderr %q", i+1, out, c.Stderr.(*strings.Builder).String())
		}
	}
}

// TestMissingMember: a member that never comes ends Serve at the
// deadline with an error naming it.
func TestMissingMember(t *testing.T) {
	name := Name("test", "3", token(t))
	l := listen(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := l.Serve(ctx, map[int]int{5: 4242}, []*os.File{memfd(t, "x")}, nil)
	if err == nil || !strings.Contains(err.Error(), "rank 5 (pid 4242)") {
		t.Errorf("Serve with a member missing: %v, want an error naming rank 5", err)
	}
}

// TestWrongLeader: a member refuses a socket whose owner is not the
// leader pid it was told, and gives up at once when that leader has
// exited and nobody listens.
func TestWrongLeader(t *testing.T) {
	name := Name("test", "4", token(t))
	files := []*os.File{memfd(t, "x")}
	l := listen(t, name)
	served := make(chan struct{})
	go func() {
		defer close(served)
		l.Serve(context.Background(), map[int]int{1: os.Getpid()}, files, nil)
	}()
	defer func() { l.Close(); <-served }() // before the memfd's cleanup closes it
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Take(ctx, name, 1, os.Getpid()+1, 1, false); err == nil || !strings.Contains(err.Error(), "not the host leader") {
		t.Errorf("Take from a socket of another pid: %v, want a refusal", err)
	}
	// A leader that has exited: a child that is gone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	start := time.Now()
	_, err := Take(ctx, Name("test", "5", token(t)), 1, dead.Process.Pid, 1, false)
	if err == nil || !strings.Contains(err.Error(), "exited") || time.Since(start) > time.Second {
		t.Errorf("Take with a dead leader: %v after %v, want an error at once", err, time.Since(start))
	}
}

// TestOtherNetworkNamespace: a member in another network namespace
// cannot reach the leader's abstract socket; told that the leader
// listens, it learns so at once (ErrUnreachable), fetches the
// descriptors with pidfd_getfd, reads the leader's data through them and
// says so in the second file, and the leader's Serve returns it as
// fetched while serving a second member over the socket.
func TestOtherNetworkNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a network namespace needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare (util-linux) is not installed")
	}
	name := Name("test", "6", token(t))
	l := listen(t, name)
	files := []*os.File{memfd(t, "netns!"), memfd(t, "....")}
	fds := fmt.Sprintf("%d,%d", files[0].Fd(), files[1].Fd())
	far := exec.Command(unshare, "--net", os.Args[0], "-test.run=^$")
	far.Env = append(os.Environ(), memberVar+"="+name, rankVar+"=1", leaderVar+"="+strconv.Itoa(os.Getpid()), fdsVar+"="+fds)
	var out, errb strings.Builder
	far.Stdout, far.Stderr = &out, &errb
	if err := far.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { far.Process.Kill(); far.Wait() })
	near := startMember(t, name, 2, fdsVar+"="+fds)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	took := func(r int) bool {
		b := make([]byte, 4)
		files[1].ReadAt(b, 0)
		return r == 1 && string(b) == "took"
	}
	fetched, err := l.Serve(ctx, map[int]int{1: far.Process.Pid, 2: near.Process.Pid}, files, took)
	if err != nil {
		t.Fatalf("Serve: %v (the far member: %q %q)", err, out.String(), errb.String())
	}
	far.Wait()
	near.Wait()
	if len(fetched) != 1 || fetched[0] != 1 {
		t.Errorf("Serve says %v fetched the files, want [1]", fetched)
	}
	if got := out.String(); got != fmt.Sprintf("fetched: rank 1 read %q\n", "netns!") {
		t.Errorf("the member in another network namespace: stdout %q stderr %q", got, errb.String())
	}
	if got := near.Stdout.(*strings.Builder).String(); got != fmt.Sprintf("rank 2 read %q\n", "netns!") {
		t.Errorf("the member in this namespace: stdout %q stderr %q", got, near.Stderr.(*strings.Builder).String())
	}
}

// listen listens on name for the test's duration.
func listen(t *testing.T, name string) *Leader {
	t.Helper()
	l, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
