package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// machine describes where the comparison ran.
type machine struct {
	CPU    string // model name from /proc/cpuinfo
	CPUs   int    // logical CPUs online
	Kernel string // uname -sr
	Go     string // the Go toolchain
}

func readMachine() machine {
	m := machine{CPU: "unknown CPU", CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		n := 0
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "model name":
				if m.CPU == "unknown CPU" {
					m.CPU = strings.TrimSpace(v)
				}
			case "processor":
				n++
			}
		}
		f.Close()
		if n > 0 {
			m.CPUs = n
		}
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	return m
}

// loadAvg returns the 1-minute load average from /proc/loadavg.
func loadAvg() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// peerInfo describes the peer: whether it runs, and its configuration.
type peerInfo struct {
	Enabled    bool
	Skipped    string // why it does not run
	Oshrun     string // Open MPI's launcher
	Version    string // e.g. "Open MPI v4.1.4"
	UCX        string // e.g. "1.13.1", "" when unknown
	Components string // OSHMEM's components, e.g. "spml ucx; atomic basic, ucx; ..."
	Build      string // how the programs were built
}

// installHint is what the report and the terminal say when Open MPI is
// missing.
const installHint = "apt-get install -y openmpi-bin libopenmpi-dev"

// quickCmd runs a short command and returns its output ("" on error).
func quickCmd(name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return ""
	}
	return string(out)
}

// findPeer looks for Open MPI's oshcc and oshrun. /usr/bin/oshrun is
// Open MPI's; an "oshrun" first in PATH may be goshmem's, so each
// candidate must say it is Open MPI's (OpenRTE) launcher.
func findPeer() peerInfo {
	var p peerInfo
	if _, err := exec.LookPath(envOr("OSHCC", "oshcc")); err != nil {
		p.Skipped = "Open MPI not installed: no oshcc in PATH (" + installHint + ")"
		return p
	}
	var cands []string
	if v := os.Getenv("OSHRUN"); v != "" {
		cands = append(cands, v)
	}
	if v, err := exec.LookPath("oshrun"); err == nil {
		cands = append(cands, v)
	}
	cands = append(cands, "/usr/bin/oshrun")
	for _, c := range cands {
		out := quickCmd(c, "--version")
		if strings.Contains(out, "OpenRTE") || strings.Contains(out, "Open MPI") {
			p.Oshrun = c
			break
		}
	}
	if p.Oshrun == "" {
		p.Skipped = "Open MPI not installed: no Open MPI oshrun found (" + installHint + ")"
		return p
	}
	p.Enabled = true
	if out := quickCmd("ompi_info", "--version"); out != "" {
		p.Version = strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	} else if out := quickCmd(p.Oshrun, "--version"); out != "" {
		p.Version = strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	}
	if out := quickCmd("ucx_info", "-v"); out != "" {
		for _, l := range strings.Split(out, "\n") {
			if _, v, ok := strings.Cut(l, "version:"); ok && strings.Contains(l, "Library") {
				p.UCX = strings.TrimSpace(v)
				break
			}
		}
	}
	if p.UCX == "" {
		if out := strings.TrimSpace(quickCmd("dpkg-query", "-W", "-f", "${Version}", "libucx0")); out != "" {
			p.UCX = out + " (Debian package libucx0)"
		}
	}
	// OSHMEM's components (what was built; UCX picks its transports at run time).
	out := quickCmd("oshmem_info")
	if out == "" {
		out = quickCmd("ompi_info", "--all")
	}
	var comps []string
	for _, fw := range []string{"spml", "atomic", "sshmem"} {
		var names []string
		for _, l := range strings.Split(out, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "MCA "+fw+":"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					names = append(names, f[0])
				}
			}
		}
		if len(names) > 0 {
			comps = append(comps, fw+" "+strings.Join(names, ", "))
		}
	}
	p.Components = strings.Join(comps, "; ")
	return p
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
