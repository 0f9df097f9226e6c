// Command oshinfo reports how goshmem is configured on this machine:
// the version, the CPU and NUMA topology, where oshrun would place each
// PE, every SHMEM_* environment variable with its value, default and
// meaning, and the on-node transport a job would use and why.
//
//	go run ./cmd/oshinfo
//	go run ./cmd/oshinfo -n 8 --bind-to core
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/node"
	"github.com/goshmem/goshmem/numa"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("oshinfo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 0, "show where each of `N` PEs would run")
	bind := fs.String("bind-to", "core", "binding to show with -n: none or core")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: oshinfo [-n N] [--bind-to none|core]\n\n"+
			"Prints the goshmem version, the topology, the placement of N PEs,\n"+
			"every SHMEM_* variable and the on-node transport.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *bind != "none" && *bind != "core" {
		fmt.Fprintf(stderr, "oshinfo: --bind-to %q: use none or core\n", *bind)
		return 2
	}
	w := stdout
	fmt.Fprintf(w, "goshmem %s (OpenSHMEM %s API)\n\n", goshmem.Version, goshmem.SpecVersion)

	fmt.Fprintln(w, "== Topology")
	topo, err := numa.Discover("")
	if err != nil {
		fmt.Fprintf(w, "  cannot read the topology: %v\n", err)
	} else {
		online, possible, _ := numa.NumCPUs()
		fmt.Fprintf(w, "  CPUs: %d online of %d possible (%s); cache line %d bytes\n",
			online, possible, numa.FormatCPUList(topo.Online), numa.CacheLineSize())
		fmt.Fprintf(w, "  NUMA nodes: %d\n", len(topo.Nodes))
		for _, nd := range topo.Nodes {
			fmt.Fprintf(w, "    node %d cpus: %s  size: %d MiB  distances: %v\n",
				nd.ID, numa.FormatCPUList(nd.CPUs), nd.MemTotal>>20, nd.Distances)
		}
	}
	allowed, err := numa.Allowed()
	if err == nil {
		fmt.Fprintf(w, "  this process may use CPUs %s\n", numa.FormatCPUList(allowed))
	}
	if *n > 0 && err == nil {
		fmt.Fprintf(w, "\n== Placement of %d PEs (--bind-to %s)\n", *n, *bind)
		places := numa.PlaceCores(*n, allowed)
		for pe := 0; pe < *n; pe++ {
			where := "not bound (any of " + numa.FormatCPUList(allowed) + ")"
			if *bind == "core" {
				where = "CPU " + numa.FormatCPUList(places[pe])
			}
			fmt.Fprintf(w, "  PE %d: %s\n", pe, where)
		}
		if *n > len(allowed) {
			fmt.Fprintf(w, "  %d PEs share %d CPUs: waits spin briefly, then yield and sleep (SHMEM_WAIT_*)\n", *n, len(allowed))
		}
	}

	fmt.Fprintln(w, "\n== Environment (SHMEM_*)")
	var b strings.Builder
	env.Print(&b, os.Getenv)
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		fmt.Fprintln(w, "  "+line)
	}
	if extra := env.Unrecognized(os.Environ()); len(extra) > 0 {
		fmt.Fprintf(w, "  unknown SHMEM_* variables (typos?): %s\n", strings.Join(extra, ", "))
	}

	fmt.Fprintln(w, "\n== On-node transport")
	cfg, cerr := goshmem.LoadConfig()
	if cerr != nil {
		fmt.Fprintf(w, "  configuration error: %v\n", cerr)
		cfg = node.Config{}
	}
	t, notes := node.Probe(cfg)
	fmt.Fprintf(w, "  %s: %s\n", t.Name, t.Reason)
	for _, note := range notes {
		fmt.Fprintf(w, "  %s\n", note)
	}
	if cerr != nil {
		return 1
	}
	return 0
}
