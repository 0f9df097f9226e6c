package xpmem

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procUids returns the real and effective uids of process pid, from the
// Uid line of /proc/PID/status ("Uid:\treal\teffective\tsaved\tfs").
func procUids(pid int) (ruid, euid int, err error) {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	return parseStatusUids(string(b), path)
}

// parseStatusUids finds the real and effective uids in the text of a
// /proc/PID/status file.
func parseStatusUids(status, path string) (ruid, euid int, err error) {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, "Uid:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			break
		}
		ruid, err1 := strconv.Atoi(f[0])
		euid, err2 := strconv.Atoi(f[1])
		if err := errors.Join(err1, err2); err != nil {
			return 0, 0, fmt.Errorf("%s: bad Uid line %q: %w", path, strings.TrimSpace(line), err)
		}
		return ruid, euid, nil
	}
	return 0, 0, fmt.Errorf("%s: no Uid line", path)
}
