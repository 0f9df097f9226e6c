package sys

// Descriptor passing between the PEs of one host (internal/fdpass):
// peer credentials of a Unix socket and SCM_RIGHTS messages.

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// PeerCred returns the pid and uid of the process at the other end of
// the Unix socket rc (SO_PEERCRED: as it was when the connection was
// made).
func PeerCred(rc syscall.RawConn) (pid, uid int, err error) {
	var cred *unix.Ucred
	cerr := rc.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if cerr != nil {
		return 0, 0, cerr
	}
	if err != nil {
		return 0, 0, err
	}
	return int(cred.Pid), int(cred.Uid), nil
}

// Rights returns the control message that passes files' descriptors.
func Rights(files []*os.File) []byte {
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	return unix.UnixRights(fds...)
}

// RightsSpace is the control buffer size for n descriptors.
func RightsSpace(n int) int { return unix.CmsgSpace(4 * n) }

// ErrTruncated is what ParseRights reports when the kernel truncated the
// control data (MSG_CTRUNC: more descriptors came than were room for;
// the ones that did not fit are closed by the kernel).
var ErrTruncated = errors.New("control message truncated")

// ParseRights returns the descriptors of the SCM_RIGHTS messages in oob,
// as files named name; flags are recvmsg's. Descriptors of any other
// control message are not there to close; on an error every descriptor
// received is closed.
func ParseRights(oob []byte, flags int, name string) ([]*os.File, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue // not SCM_RIGHTS
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), name))
		}
	}
	if flags&unix.MSG_CTRUNC != 0 {
		for _, f := range files {
			f.Close()
		}
		return nil, ErrTruncated
	}
	return files, nil
}
