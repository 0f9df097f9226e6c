// Package fdpass hands descriptors from one process to the others of
// its host: goshmem's host leader gives the job's control and heaps
// segments (memfds) to its host-mates when the cluster's launcher, not
// oshrun, started them, so that they map the same memory without a file
// name anywhere.
//
// # Protocol
//
// The leader listens on an abstract Unix socket (SOCK_SEQPACKET) named
// "goshmem-" + a label + the job's id + a random token that the leader
// publishes to its host-mates out of band (through PMI). Abstract
// sockets have no file and vanish with the listener; they belong to the
// network namespace, which the processes of one host share. A member
// connects and sends one hello message: magic, version, its rank and
// its pid. The leader checks the connection's SO_PEERCRED: the uid must
// be the leader's, the pid the one in the hello and the one the member
// published; it must be a member it expects and has not served. It then
// sends one message with a header (magic, version, the rank echoed, the
// number of descriptors) and the descriptors as SCM_RIGHTS, and waits
// for a one-byte acknowledgement. The member checks the leader's
// credentials the same way (uid, and the pid the leader published),
// rejects a truncated control message, and acknowledges.
//
// A connection that fails a check is closed and recorded; Serve keeps
// serving the members it expects until the deadline, and then reports
// which members never came, with the rejected connections. A member
// whose leader dies sees the connection end at once.
//
// # When the socket cannot be reached
//
// An abstract socket belongs to a network namespace: PEs that the
// launcher counts as one host but that run in different network
// namespaces (containers of one machine sharing its pid namespace, or
// SHMEM_HOST grouping test hosts) cannot reach the leader's socket. A
// member told that the leader already listens (Take's listening
// argument) then gets ErrUnreachable at once, and Fetch copies the
// descriptors straight out of the leader process with pidfd_getfd,
// whose permission is the one CMA (process_vm_readv/writev) needs:
// ptrace access to the leader. The leader, which never sees such a
// member connect, learns that it has the descriptors through Serve's
// took function (node: the member's pid in its control-block slot).
package fdpass

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
)

const (
	magic   = 0x676f7366 // "gosf"
	version = 1
	hello   = 16 // magic, version, rank, pid: 4 bytes each
	header  = 16 // magic, version, rank, count
)

// Name returns the abstract socket name for a job id, a token and a
// label (what the descriptors are for). The token should be random and
// published only to the members.
func Name(label, jobID, token string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
				return r
			}
			return '_'
		}, s)
	}
	return "goshmem-" + clean(label) + "-" + clean(jobID) + "-" + clean(token)
}

// Leader is the listening side.
type Leader struct {
	ln   *net.UnixListener
	name string
}

// Listen starts listening on the abstract socket name. Listen before
// publishing the name, so that members can connect as soon as they
// learn it.
func Listen(name string) (*Leader, error) {
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: "@" + name, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("fdpass: listening on abstract socket %q: %w", name, err)
	}
	return &Leader{ln: ln, name: name}, nil
}

// Close stops listening.
func (l *Leader) Close() error { return l.ln.Close() }

// tookEvery is how often Serve asks its took function about the
// members it has not served.
const tookEvery = 20 * time.Millisecond

// Serve gives files to every member of members (rank -> pid), each once,
// and returns when all have acknowledged or, when took is not nil, took
// reports that they have the files from elsewhere (Fetch); it returns
// those members' ranks, in increasing order. It fails with an error
// naming the members that did neither by ctx's deadline (and the
// connections it rejected). The files stay open: the caller still holds
// them, and must until every member has them.
func (l *Leader) Serve(ctx context.Context, members map[int]int, files []*os.File, took func(rank int) bool) ([]int, error) {
	left := make(map[int]int, len(members))
	for r, p := range members {
		left[r] = p
	}
	var rejected []string
	var fetched []int
	uid := sys.Getuid()
	rights := sys.Rights(files)
	for len(left) > 0 {
		d, ok := ctx.Deadline()
		if took != nil && (!ok || time.Until(d) > tookEvery) {
			d, ok = time.Now().Add(tookEvery), true
		}
		if ok {
			l.ln.SetDeadline(d)
		}
		c, err := l.ln.AcceptUnix()
		if err != nil && took != nil && errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
			for r := range left {
				if took(r) {
					delete(left, r)
					fetched = append(fetched, r)
				}
			}
			continue
		}
		if err != nil {
			var missing []string
			for r, p := range left {
				missing = append(missing, fmt.Sprintf("rank %d (pid %d)", r, p))
			}
			msg := fmt.Sprintf("fdpass: %s never fetched the job's segments (%v)", strings.Join(missing, ", "), err)
			if len(rejected) > 0 {
				msg += "; rejected: " + strings.Join(rejected, "; ")
			}
			return fetched, errors.New(msg + "; did those processes start on this host, under the same user?")
		}
		rank, why := l.serveOne(ctx, c, left, uid, rights, len(files))
		c.Close()
		if why != "" {
			rejected = append(rejected, why)
			continue
		}
		delete(left, rank)
	}
	slices.Sort(fetched)
	return fetched, nil
}

// serveOne checks one connection and, if it is an expected member,
// sends it the descriptors; it returns the member's rank, or why it
// was rejected.
func (l *Leader) serveOne(ctx context.Context, c *net.UnixConn, left map[int]int, uid int, rights []byte, n int) (int, string) {
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	} else {
		c.SetDeadline(time.Now().Add(10 * time.Second))
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err.Error()
	}
	pid, puid, err := sys.PeerCred(rc)
	if err != nil {
		return 0, fmt.Sprintf("peer credentials: %v", err)
	}
	if puid != uid {
		return 0, fmt.Sprintf("pid %d runs as uid %d, not %d", pid, puid, uid)
	}
	var b [hello]byte
	k, err := c.Read(b[:])
	if err != nil || k != hello || binary.LittleEndian.Uint32(b[0:]) != magic || binary.LittleEndian.Uint32(b[4:]) != version {
		return 0, fmt.Sprintf("pid %d sent no valid hello (%d bytes, %v)", pid, k, err)
	}
	rank := int(binary.LittleEndian.Uint32(b[8:]))
	said := int(binary.LittleEndian.Uint32(b[12:]))
	want, ok := left[rank]
	switch {
	case !ok:
		return 0, fmt.Sprintf("pid %d claims rank %d, which is not an expected member or was served already", pid, rank)
	case said != pid || want != pid:
		return 0, fmt.Sprintf("rank %d: the connection's pid is %d, the hello says %d, the member published %d", rank, pid, said, want)
	}
	var h [header]byte
	binary.LittleEndian.PutUint32(h[0:], magic)
	binary.LittleEndian.PutUint32(h[4:], version)
	binary.LittleEndian.PutUint32(h[8:], uint32(rank))
	binary.LittleEndian.PutUint32(h[12:], uint32(n))
	if _, _, err := c.WriteMsgUnix(h[:], rights, nil); err != nil {
		return 0, fmt.Sprintf("rank %d: sending the descriptors: %v", rank, err)
	}
	var ack [1]byte
	if k, err := c.Read(ack[:]); err != nil || k != 1 {
		return 0, fmt.Sprintf("rank %d: no acknowledgement (%v)", rank, err)
	}
	return rank, ""
}

// ErrUnreachable is Take's error when nobody listens on the name in
// this process's network namespace although the leader listens: the
// member and its leader are in different network namespaces, and Fetch
// is the way left.
var ErrUnreachable = errors.New("the host leader's socket cannot be reached from this process's network namespace")

// Take connects to the leader's socket name as member rank, checks that
// the leader is process leaderPID of this user, and returns the n
// descriptors it sends, as files (close-on-exec). It fails by ctx's
// deadline, or at once if the leader closes the connection. Until the
// socket is there, it retries; when the caller knows that the leader
// listens already (listening), a socket that is not there fails at once
// with ErrUnreachable.
func Take(ctx context.Context, name string, rank, leaderPID, n int, listening bool) ([]*os.File, error) {
	addr := &net.UnixAddr{Name: "@" + name, Net: "unixpacket"}
	var c *net.UnixConn
	var err error
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		if c, err = net.DialUnix("unixpacket", nil, addr); err == nil {
			break
		}
		if listening && errors.Is(err, sys.ErrConnRefused) && !sys.ProcessExited(leaderPID) {
			return nil, fmt.Errorf("fdpass: rank %d: %w (%q: %v)", rank, ErrUnreachable, name, err)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("fdpass: rank %d: cannot reach the host leader (pid %d) at %q: %v", rank, leaderPID, name, err)
		}
		if sys.ProcessExited(leaderPID) {
			return nil, fmt.Errorf("fdpass: rank %d: the host leader (pid %d) has exited", rank, leaderPID)
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	}
	fail := func(format string, args ...any) ([]*os.File, error) {
		return nil, fmt.Errorf("fdpass: rank %d: "+format, append([]any{rank}, args...)...)
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return fail("%v", err)
	}
	pid, uid, err := sys.PeerCred(rc)
	if err != nil {
		return fail("leader's credentials: %v", err)
	}
	if uid != sys.Getuid() || pid != leaderPID {
		return fail("the socket %q belongs to pid %d uid %d, not the host leader (pid %d, uid %d)", name, pid, uid, leaderPID, sys.Getuid())
	}
	var b [hello]byte
	binary.LittleEndian.PutUint32(b[0:], magic)
	binary.LittleEndian.PutUint32(b[4:], version)
	binary.LittleEndian.PutUint32(b[8:], uint32(rank))
	binary.LittleEndian.PutUint32(b[12:], uint32(os.Getpid()))
	if _, err := c.Write(b[:]); err != nil {
		return fail("hello: %v", err)
	}
	var h [header]byte
	oob := make([]byte, sys.RightsSpace(n))
	k, oobn, flags, _, err := c.ReadMsgUnix(h[:], oob)
	if err != nil {
		return fail("the leader closed the connection before sending the descriptors (%v): it rejected this process or died", err)
	}
	files, err := sys.ParseRights(oob[:oobn], flags, "goshmem-segment")
	if err != nil {
		return fail("descriptors: %v", err)
	}
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	if k != header || binary.LittleEndian.Uint32(h[0:]) != magic || binary.LittleEndian.Uint32(h[4:]) != version ||
		int(binary.LittleEndian.Uint32(h[8:])) != rank || int(binary.LittleEndian.Uint32(h[12:])) != len(files) || len(files) != n {
		closeAll()
		return fail("unexpected answer: %d header bytes, %d descriptors, want %d", k, len(files), n)
	}
	if _, err := c.Write([]byte{1}); err != nil {
		closeAll()
		return fail("acknowledgement: %v", err)
	}
	return files, nil
}

// Fetch copies descriptors fds of process leaderPID, the host leader,
// with pidfd_getfd, and returns them as files (close-on-exec): the
// fallback when Take returns ErrUnreachable. The kernel allows it with
// ptrace access to the leader (the same user and a dumpable process,
// or CAP_SYS_PTRACE; see /proc/sys/kernel/yama/ptrace_scope), which is
// what CMA needs too. The caller checks what the files hold (node: the
// job id in the control block).
func Fetch(leaderPID int, fds []int) ([]*os.File, error) {
	pidfd, err := sys.PidfdOpen(leaderPID)
	if err != nil {
		return nil, fmt.Errorf("fdpass: the host leader (pid %d): %w", leaderPID, err)
	}
	defer sys.Close(pidfd)
	var files []*os.File
	fail := func(err error) ([]*os.File, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	for _, fd := range fds {
		got, err := sys.PidfdGetfd(pidfd, fd)
		if err != nil {
			why := ""
			switch {
			case sys.PidfdExited(pidfd):
				why = ": the leader has exited"
			case errors.Is(err, sys.ErrPerm), errors.Is(err, sys.ErrAccess):
				why = ": pidfd_getfd needs ptrace access to the leader (the same user and a dumpable process, or CAP_SYS_PTRACE; see /proc/sys/kernel/yama/ptrace_scope), as CMA does"
			}
			return fail(fmt.Errorf("fdpass: descriptor %d of the host leader (pid %d): %w%s", fd, leaderPID, err, why))
		}
		files = append(files, os.NewFile(uintptr(got), "goshmem-segment"))
	}
	return files, nil
}
