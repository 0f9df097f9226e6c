package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internal/launch"
)

// TestImbalance runs the program through the launcher, small, as
// processes, goroutines and both, with stealing on and off, and with
// the heavy PE rotating: the checksum must match the serial
// recomputation every time, chunks must be stolen only with stealing
// on, and the serial mode must give the same checksum.
func TestImbalance(t *testing.T) {
	args := []string{"-i", "6", "-cells", "64", "-cost", "300", "-chunk", "2"}
	serialSum := ""
	{
		out := runProgram(t, 0, 0, "", append([]string{"-serial", "-n", "4"}, args...))
		serialSum = checksum(t, out)
	}
	for _, tc := range []struct {
		name      string
		npes, ppp int
		steal     string
		extra     []string
	}{
		{"4x1-on", 4, 1, "on", nil},
		{"4x1-off", 4, 1, "off", nil},
		{"1x4-on", 4, 4, "on", nil},
		{"2x2-on", 4, 2, "on", nil},
		{"2x2-on-rotate", 4, 2, "on", []string{"-rotate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runProgram(t, tc.npes, tc.ppp, tc.steal, append(args, tc.extra...))
			if !strings.Contains(out, "check: ok") {
				t.Fatalf("no \"check: ok\":\n%s", out)
			}
			if len(tc.extra) == 0 && checksum(t, out) != serialSum {
				t.Errorf("checksum %s, serial mode %s", checksum(t, out), serialSum)
			}
			m := regexp.MustCompile(`chunks run by other PEs than their owner: (\d+)`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no count of stolen chunks:\n%s", out)
			}
			stolen, _ := strconv.Atoi(m[1])
			if tc.steal == "off" && stolen != 0 {
				t.Errorf("stealing off, yet %d chunks stolen", stolen)
			}
			t.Logf("\n%s", out)
		})
	}
}

func checksum(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`checksum (0x[0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no checksum:\n%s", out)
	}
	return m[1]
}

// runProgram runs the program under the launcher (npes > 0) or alone.
func runProgram(t *testing.T, npes, ppp int, steal string, args []string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	cfg := launch.Config{NPEs: max(npes, 1), PEsPerProc: max(ppp, 1), Program: ".", Args: args,
		Env:     []string{"SHMEM_SYMMETRIC_SIZE=8M", "SHMEM_TASK_STEAL=" + steal},
		Timeout: time.Minute, Stdout: &out, Stderr: &errOut}
	if steal == "" {
		cfg.Env = cfg.Env[:1]
	}
	code, err := launch.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || errOut.Len() > 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	return out.String()
}
