package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internal/launch"
)

// TestHybridReduce runs the program through the launcher, with small
// sizes, as processes of one PE, as processes of two PEs, with domains
// that do not divide the job, and with TeamShared as the domain, and
// checks that the hierarchical and flat reductions matched.
func TestHybridReduce(t *testing.T) {
	cases := []struct {
		name       string
		npes, ppp  int
		args       []string
		leaderLine string
	}{
		{"4PEs", 4, 1, []string{"-n", "20000", "-i", "20", "-g", "2"}, "leaders team of 2 PEs"},
		{"4PEs-2perproc", 4, 2, []string{"-n", "20000", "-i", "20", "-g", "3", "-v", "700"}, "leaders team of 2 PEs"},
		{"3PEs-uneven", 3, 1, []string{"-n", "5000", "-i", "5", "-g", "2", "-d", "2"}, "leaders team of 2 PEs"},
		{"2PEs-shared", 2, 2, []string{"-n", "5000", "-i", "5", "-d", "0"}, "leaders team of 1 PE "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code, err := launch.Run(context.Background(), launch.Config{
				NPEs:       c.npes,
				PEsPerProc: c.ppp,
				Program:    ".",
				Args:       c.args,
				Env:        []string{"SHMEM_SYMMETRIC_SIZE=16M"},
				Timeout:    time.Minute,
				Stdout:     &out,
				Stderr:     &errOut,
			})
			if err != nil {
				t.Fatal(err)
			}
			if code != 0 {
				t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
			}
			if errOut.Len() > 0 {
				t.Errorf("stderr:\n%s", errOut.String())
			}
			s := out.String()
			t.Logf("\n%s", s)
			lines := strings.Split(strings.TrimSpace(s), "\n")
			if lines[len(lines)-1] != "match" {
				t.Errorf("the output does not end with \"match\"")
			}
			for _, want := range []string{c.leaderLine, "hierarchical:", "flat:", "result:"} {
				if !strings.Contains(s, want) {
					t.Errorf("the output lacks %q", want)
				}
			}
		})
	}
}
