package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/goshmem/goshmem/internal/launch"
)

// TestISx runs the program through the launcher with small key counts,
// as processes of one PE and of two PEs, with more goroutines than PEs,
// and with a key range so uneven that the receive buffer must grow,
// and checks that every PE printed its timings and the sort verified.
func TestISx(t *testing.T) {
	cases := []struct {
		name      string
		npes, ppp int
		args      []string
		want      []string
	}{
		{"4PEs", 4, 1, []string{"-n", "50000", "-t", "2", "-i", "2"}, nil},
		{"4PEs-2perproc", 4, 2, []string{"-n", "50000", "-t", "3"}, nil},
		{"3PEs-grow", 3, 1, []string{"-n", "2000", "-t", "5", "-maxkey", "4", "-slack", "1"},
			[]string{"growing it on every PE"}},
		{"2PEs-2perproc-maxkey", 2, 2, []string{"-n", "30000", "-t", "2", "-maxkey", "1000003", "-i", "2"}, nil},
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
			if lines[len(lines)-1] != "verified" {
				t.Errorf("the output does not end with \"verified\"")
			}
			want := append([]string{"max:"}, c.want...)
			for q := range c.npes {
				want = append(want, fmt.Sprintf("PE %3d: generate", q))
			}
			for _, w := range want {
				if !strings.Contains(s, w) {
					t.Errorf("the output lacks %q", w)
				}
			}
		})
	}
}
