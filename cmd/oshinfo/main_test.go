package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goshmem/goshmem/internal/env"
)

// cleanEnv unsets every knob for the test, so that the runner's own
// SHMEM_* settings do not change the output.
func cleanEnv(t *testing.T) {
	for _, k := range env.Knobs() {
		t.Setenv(k.Name, "")
	}
}

func runInfo(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunDefault(t *testing.T) {
	cleanEnv(t)
	code, out, errs := runInfo(t)
	if code != 0 {
		t.Fatalf("run() = %d, stderr %q, stdout:\n%s", code, errs, out)
	}
	if errs != "" {
		t.Errorf("stderr = %q, want empty", errs)
	}
	for _, want := range []string{
		"goshmem ", "OpenSHMEM ",
		"== Topology", "CPUs: ", "cache line ",
		"== Environment (SHMEM_*)",
		"SHMEM_SYMMETRIC_SIZE", "SHMEM_TRANSPORT", "SHMEM_WAIT_SLEEP",
		"== On-node transport",
		"xpmem",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Every knob is listed.
	for _, k := range env.Knobs() {
		if !strings.Contains(out, k.Name) {
			t.Errorf("output does not list %s", k.Name)
		}
	}
	// The sections come in order.
	idx := func(s string) int { return strings.Index(out, s) }
	if !(idx("== Topology") < idx("== Environment") && idx("== Environment") < idx("== On-node transport")) {
		t.Errorf("sections out of order:\n%s", out)
	}
	// Without -n, no placement.
	if strings.Contains(out, "== Placement") || regexp.MustCompile(`(?m)^  PE \d+:`).MatchString(out) {
		t.Errorf("placement shown without -n:\n%s", out)
	}
	if strings.Contains(out, "configuration error") {
		t.Errorf("configuration error with a clean environment:\n%s", out)
	}
}

func TestRunPlacement(t *testing.T) {
	cleanEnv(t)
	pe := regexp.MustCompile(`(?m)^  PE (\d+): (.*)$`)
	cases := []struct {
		args []string
		want []string
		pes  int
	}{
		{[]string{"-n", "3"}, []string{"== Placement of 3 PEs (--bind-to core)", "PE 0: CPU ", "PE 2: CPU "}, 3},
		{[]string{"-n", "3", "--bind-to", "none"}, []string{"== Placement of 3 PEs (--bind-to none)", "PE 2: not bound (any of "}, 3},
		{[]string{"-n=1", "-bind-to=core"}, []string{"== Placement of 1 PEs (--bind-to core)", "PE 0: CPU "}, 1},
		{[]string{"-n", "0"}, nil, 0},
		{[]string{"-n", "-2"}, nil, 0},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errs := runInfo(t, c.args...)
			if code != 0 {
				t.Fatalf("run(%q) = %d, stderr %q", c.args, code, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			m := pe.FindAllStringSubmatch(out, -1)
			if len(m) != c.pes {
				t.Fatalf("%d PE lines, want %d:\n%s", len(m), c.pes, out)
			}
			for i, l := range m {
				if l[1] != strconv.Itoa(i) {
					t.Errorf("PE line %d is %q", i, l[0])
				}
			}
			if c.pes > 0 && !strings.Contains(out, "== Environment") {
				t.Error("placement replaced the rest of the report")
			}
		})
	}
}

func TestRunUsageErrors(t *testing.T) {
	cleanEnv(t)
	cases := []struct {
		args    []string
		wantErr []string
	}{
		{[]string{"--bind-to", "socket"}, []string{`oshinfo: --bind-to "socket": use none or core`}},
		{[]string{"--bind-to", ""}, []string{`--bind-to "": use none or core`}},
		{[]string{"-n", "3", "--bind-to", "CORE"}, []string{`--bind-to "CORE"`}},
		{[]string{"-bogus"}, []string{"flag provided but not defined: -bogus", "usage: oshinfo"}},
		{[]string{"-n", "three"}, []string{"invalid value", "usage: oshinfo"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errs := runInfo(t, c.args...)
			if code != 2 {
				t.Errorf("run(%q) = %d, want 2", c.args, code)
			}
			if out != "" {
				t.Errorf("a usage error printed a report:\n%s", out)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q lacks %q", errs, w)
				}
			}
		})
	}
}

func TestRunBadEnvironment(t *testing.T) {
	cleanEnv(t)
	t.Setenv("SHMEM_SYMMETRIC_SIZE", "12x")
	code, out, errs := runInfo(t)
	if code != 1 {
		t.Fatalf("run() with SHMEM_SYMMETRIC_SIZE=12x = %d, want 1; stderr %q", code, errs)
	}
	for _, w := range []string{
		"configuration error",
		`SHMEM_SYMMETRIC_SIZE="12x"`,
		`unknown suffix "x"`,
		"== On-node transport", // the report is still complete
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	// The environment section shows the bad value as given.
	if !regexp.MustCompile(`SHMEM_SYMMETRIC_SIZE +=? *12x`).MatchString(out) {
		t.Errorf("environment section does not show the value 12x:\n%s", out)
	}
}

func TestRunUnknownVariable(t *testing.T) {
	cleanEnv(t)
	t.Setenv("SHMEM_SYMETRIC_SIZE", "1g") // misspelled
	code, out, _ := runInfo(t)
	if code != 0 {
		t.Fatalf("run() = %d, want 0", code)
	}
	if !strings.Contains(out, "unknown SHMEM_* variables (typos?): SHMEM_SYMETRIC_SIZE") {
		t.Errorf("the misspelled variable is not reported:\n%s", out)
	}
}
