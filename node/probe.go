package node

import (
	"fmt"
	"os"

	"github.com/goshmem/goshmem/internal/mem"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/numa"
	"github.com/goshmem/goshmem/shm"
	"github.com/goshmem/goshmem/xpmem"
)

// Probe reports the on-node transport a job would use here under cfg,
// and why, by doing what start-up does on a small segment: create it,
// map it through the XPMEM model, and try process_vm_readv as the
// fallback. cmd/oshinfo prints it.
func Probe(cfg Config) (Transport, []string) {
	var notes []string
	seg, err := shm.Create("goshmem-probe", 1<<16, shm.Options{})
	if err != nil {
		return Transport{"none", "no shared-memory segment can be created: " + err.Error()}, notes
	}
	defer seg.Close()
	notes = append(notes, fmt.Sprintf("segments: %s (nothing is named in any file system; nothing can be left behind)", seg.Kind()))
	att, mapErr := attach(seg, seg.Size(), 1) // any address
	if att != nil {
		notes = append(notes, probeHeapPolicy(cfg, att.Bytes()))
	}
	cmaErr := probeCMA(att)
	if att != nil {
		att.Detach()
	}
	if cmaErr == nil {
		notes = append(notes, "cma: process_vm_readv/writev available (fallback for heaps that cannot be mapped)")
	} else {
		notes = append(notes, "cma: unavailable: "+cmaErr.Error())
	}
	notes = append(notes, probeFence(cfg))
	switch {
	case cfg.Transport == "cma" && cmaErr != nil:
		return Transport{"none", "SHMEM_TRANSPORT=cma but process_vm_readv fails: " + cmaErr.Error()}, notes
	case cfg.Transport == "cma":
		return Transport{"cma", "SHMEM_TRANSPORT=cma: peers' heaps are read and written with process_vm_readv/writev; atomics are serialized by a lock per PE"}, notes
	case mapErr != nil && cmaErr == nil && cfg.Transport != "xpmem":
		return Transport{"cma", "heaps cannot be mapped (" + mapErr.Error() + "); falling back to process_vm_readv/writev"}, notes
	case mapErr != nil:
		return Transport{"none", "heaps cannot be mapped: " + mapErr.Error()}, notes
	}
	return Transport{"xpmem", "every PE's process maps every heap of the node (memfd segments that oshrun, or the host's leader under srun or mpiexec, hands every process): put, get and atomics are loads, stores and CPU atomics"}, notes
}

func probeCMA(att *xpmem.Attachment) error {
	if att == nil {
		return fmt.Errorf("no mapping to read")
	}
	b := att.Bytes()
	b[0] = 42
	var got [1]byte
	if err := sys.ProcessVMRead(os.Getpid(), got[:], uintptrOf(b)); err != nil {
		return err
	}
	if got[0] != 42 {
		return fmt.Errorf("process_vm_readv read %d, want 42", got[0])
	}
	return nil
}

func uintptrOf(b []byte) uintptr { return mem.Addr(b) }

// probeHeapPolicy says what SHMEM_HEAP_POLICY would do for a PE of this
// process, by setting it on the probe segment b as start-up would.
func probeHeapPolicy(cfg Config, b []byte) string {
	if err := cfg.Validate(); err != nil {
		return "heap policy: not probed, the configuration is invalid: " + err.Error()
	}
	policy := heapPolicy(cfg)
	topo := lazyTopology()
	home := -1
	if t, err := topo(); err == nil {
		home = processNode(t)
	}
	h := placeHeap(b, policy, home, topo, cfg.Huge)
	var s string
	switch {
	case policy == numa.MemDefault:
		s = "heap policy: none (first touch: a page lives on the node of the CPU that first touches it)"
	case h.Nodes == nil:
		return fmt.Sprintf("heap policy: %s, but not for a PE of this process: %s", h.Policy, h.Note)
	case policy == numa.MemLocal:
		s = fmt.Sprintf("heap policy: local (each PE's heap on its home NUMA node, MPOL_PREFERRED; a PE of this process: node %d)", h.Nodes[0])
	default:
		s = fmt.Sprintf("heap policy: interleave (each PE's heap page by page across nodes %s)", numa.FormatCPUList(h.Nodes))
	}
	if h.Note != "" {
		s += "; " + h.Note
	}
	return s
}

// probeFence describes the waits' doorbell contract a job would use
// here (internal/wait): whether a waiter fences with membarrier before
// it sleeps, so that a put never wakes it late and small broadcasts
// publish with plain stores.
func probeFence(cfg Config) string {
	if cfg.NoFence {
		return "waits: SHMEM_WAIT_FENCE=off: flags are atomic exchanges, a put's wake-up can be late by up to one sleep"
	}
	if err := sys.MembarrierRegister(); err != nil {
		return "waits: no membarrier fence (" + err.Error() + "): flags are atomic exchanges, a put's wake-up can be late by up to one sleep"
	}
	return "waits: membarrier fence available: a waiter fences before it sleeps, a put never wakes it late (SHMEM_WAIT_FENCE)"
}
