package node

// Wire-up under a cluster launcher (srun --mpi=pmi2, MPICH's mpiexec):
// the launcher starts one process per PE and serves PMI; there is no
// oshrun to create the job's segments. Every process learns its rank
// and the job's size from PMI and publishes its host and pid; the PEs
// of each host form one shared-memory domain whose leader (its lowest
// rank) creates the control and heaps segments, as oshrun would, and
// hands both descriptors to each host-mate over an abstract Unix socket
// (internal/fdpass: SCM_RIGHTS, peer credentials checked both ways, no
// file name anywhere). From then on the processes run exactly as under
// oshrun: they map every heap of the host, publish their slots and meet
// in the start-up barrier.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goshmem/goshmem/internal/fdpass"
	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/pmi"
	"github.com/goshmem/goshmem/internode/backends"
	"github.com/goshmem/goshmem/shm"
)

// wireupTimeout bounds each PMI exchange and the descriptor hand-off:
// a fence waits for the slowest process of the job to start.
const wireupTimeout = 60 * time.Second

// Cluster is what a PE learned from its launcher's PMI at start-up.
type Cluster struct {
	Launcher string   // "slurm", "hydra" or "pmi"
	PMI      int      // the PMI wire protocol version in use
	Hosts    []string // the job's hosts, in order of their lowest rank
	HostOf   []int    // the host index of every rank
	Leaders  []int    // the leader (lowest rank) of every host
	Mapping  string   // where HostOf came from: "PMI_process_mapping", "SHMEM_HOST" or "host names"
	// Transport is the leaders' transport (SHMEM_INTERNODE) when the job
	// spans hosts.
	Transport string
	// SameMachine[h] tells whether host h runs on this process's machine
	// (its leader reported the same kernel boot id): test hosts that are
	// namespaces of one machine, or SHMEM_HOST groups. Their PEs and
	// leaders share this machine's CPUs, which the waiting policy counts.
	SameMachine []bool
	// Handoff says how this host's segments reached its PEs: over the
	// leader's socket, or fetched with pidfd_getfd by PEs in another
	// network namespace (on the leader: which PEs did).
	Handoff string
}

// internodeName is the transport between hosts that cfg asks for, the
// default named.
func internodeName(cfg Config) string {
	if cfg.Internode == "" {
		return backends.Default
	}
	return cfg.Internode
}

// startPMI wires this process up through c. It returns the host's
// segments and this process's spec, as oshrun's environment would give
// them.
func startPMI(cfg Config, c *pmi.Client) (*job.Segments, job.Spec, *Cluster, *shm.Segment, error) {
	rank, size := c.Rank(), c.Size()
	host := cfg.Host
	if host == "" || host == "auto" {
		h, err := os.Hostname()
		if err != nil {
			return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PMI wire-up: the host name: %v; set SHMEM_HOST", err)
		}
		host = h
	}
	var tok [12]byte
	rand.Read(tok[:])
	token := hex.EncodeToString(tok[:])
	// Round 1: what every rank needs of every other.
	for _, kv := range []struct{ k, v string }{
		{"host", host},
		{"pid", strconv.Itoa(os.Getpid())},
		{"heap", fmt.Sprintf("%d,%t", cfg.HeapSize, cfg.Huge)},
		{"xport", internodeName(cfg)},
		{"tok", token},
		{"boot", bootID()},
	} {
		if err := c.Put(kv.k, []byte(kv.v)); err != nil {
			return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PMI wire-up: %w", err)
		}
	}
	if err := c.Fence(); err != nil {
		return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PMI wire-up: %w", err)
	}
	cl := &Cluster{Launcher: c.Launcher(), PMI: c.Version()}
	// Hosts: SHMEM_HOST (tests), else the launcher's process mapping (one
	// PMI get), else every rank's host name (a get per rank: about 0.1 ms
	// each, so only for launchers without a mapping).
	var groups []int
	switch m, ok, err := c.ProcessMapping(); {
	case err != nil:
		return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PMI wire-up: %w", err)
	case ok && (cfg.Host == "" || cfg.Host == "auto"):
		groups, cl.Mapping = m, "PMI_process_mapping"
	default:
		groups = make([]int, size)
		index := map[string]int{}
		for r := range size {
			b, err := c.Get(r, "host")
			if err != nil {
				return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PMI wire-up: rank %d's host: %w", r, err)
			}
			if _, ok := index[string(b)]; !ok {
				index[string(b)] = len(index)
			}
			groups[r] = index[string(b)]
		}
		cl.Mapping = "host names"
		if cfg.Host != "" && cfg.Host != "auto" {
			cl.Mapping = "SHMEM_HOST"
		}
	}
	// Number the hosts in order of their lowest rank, which leads each.
	index := map[int]int{}
	cl.HostOf = make([]int, size)
	for r, g := range groups {
		i, ok := index[g]
		if !ok {
			i = len(cl.Leaders)
			index[g] = i
			cl.Leaders = append(cl.Leaders, r)
		}
		cl.HostOf[r] = i
	}
	myBoot := bootID()
	for _, l := range cl.Leaders {
		b, err := c.Get(l, "host")
		if err != nil {
			return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PMI wire-up: rank %d's host: %w", l, err)
		}
		cl.Hosts = append(cl.Hosts, string(b))
		boot, err := c.Get(l, "boot")
		if err != nil {
			return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PMI wire-up: rank %d's boot id: %w", l, err)
		}
		cl.SameMachine = append(cl.SameMachine, len(cl.Leaders) > 1 && string(boot) == myBoot && myBoot != "")
	}
	me := cl.HostOf[rank]
	leader := cl.Leaders[me]
	leaderHeap, err := c.Get(leader, "heap")
	if err != nil {
		return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PMI wire-up: %w", err)
	}
	if mine := fmt.Sprintf("%d,%t", cfg.HeapSize, cfg.Huge); string(leaderHeap) != mine {
		return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PE %d has heap %s (SHMEM_SYMMETRIC_SIZE, huge pages) but PE %d, its host's leader, has %s: give every PE the same settings",
			rank, mine, leader, leaderHeap)
	}
	if len(cl.Hosts) > 1 && leader != 0 {
		// Every PE also checks against PE 0: the job's heaps are symmetric
		// across hosts.
		h0, err := c.Get(0, "heap")
		if err != nil {
			return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PMI wire-up: %w", err)
		}
		if string(h0) != string(leaderHeap) && rank == leader {
			return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PE %d (host %s's leader) has heap %s (SHMEM_SYMMETRIC_SIZE, huge pages) but PE 0 (host %s) has %s: give every PE of every host the same settings",
				rank, host, leaderHeap, cl.Hosts[0], h0)
		}
	}
	if len(cl.Hosts) > 1 {
		// The transport between hosts: every PE against its leader, the
		// leaders against PE 0 (a leader with another transport would
		// fail only at its first message, with a less useful error).
		mine := internodeName(cfg)
		for _, q := range []int{leader, 0} {
			if q == rank || q == 0 && rank != leader {
				continue
			}
			theirs, err := c.Get(q, "xport")
			if err != nil {
				return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PMI wire-up: %w", err)
			}
			if string(theirs) != mine {
				return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PE %d (host %s) uses the transport %q between hosts (SHMEM_INTERNODE) but PE %d (host %s) uses %q: give every PE of every host the same SHMEM_INTERNODE",
					rank, host, mine, q, cl.Hosts[cl.HostOf[q]], theirs)
			}
		}
	}
	var xseg *shm.Segment // the host's leader queue and mailboxes (several hosts)
	nfiles := 2
	if len(cl.Hosts) > 1 {
		nfiles = 3
	}
	spec := job.Spec{NPEs: size, FirstPE: rank, LocalPEs: 1}
	jobTag := c.JobID()
	leaderTok, err := c.Get(leader, "tok")
	if err != nil {
		return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PMI wire-up: %w", err)
	}
	name := fdpass.Name("segments", jobTag, string(leaderTok))
	ctx, cancel := context.WithTimeout(context.Background(), wireupTimeout)
	defer cancel()
	if rank == leader {
		segs, err := job.Create(size, cfg.HeapSize, job.CreateOptions{Huge: cfg.Huge})
		if err != nil {
			return nil, job.Spec{}, nil, nil, err
		}
		files := segs.Files()
		if nfiles == 3 {
			n := 0
			for _, h := range cl.HostOf {
				if h == me {
					n++
				}
			}
			if xseg, err = shm.Create(fmt.Sprintf("goshmem-xhost-%x", segs.JobID), xhostSize(n), shm.Options{}); err != nil {
				segs.Close()
				return nil, job.Spec{}, nil, nil, err
			}
			if err := initXhost(xseg); err != nil {
				segs.Close()
				xseg.Close()
				return nil, job.Spec{}, nil, nil, err
			}
			files = append(files, xseg.File())
		}
		l, err := fdpass.Listen(name)
		if err != nil {
			segs.Close()
			return nil, job.Spec{}, nil, nil, err
		}
		defer l.Close()
		// Round 2: the segments' job id, once the leader listens, and
		// the descriptors' numbers here (for members that cannot reach
		// the socket: fdpass.Fetch).
		fds := make([]string, len(files))
		for i, f := range files {
			fds[i] = strconv.Itoa(int(f.Fd()))
		}
		for _, kv := range []struct{ k, v string }{{"jobid", strconv.FormatUint(segs.JobID, 16)}, {"fds", strings.Join(fds, ",")}} {
			if err := c.Put(kv.k, []byte(kv.v)); err != nil {
				segs.Close()
				return nil, job.Spec{}, nil, nil, err
			}
		}
		if err := c.Fence(); err != nil {
			segs.Close()
			return nil, job.Spec{}, nil, nil, err
		}
		members := map[int]int{}
		for r := range size {
			if r != rank && cl.HostOf[r] == me {
				p, err := c.Get(r, "pid")
				if err != nil {
					segs.Close()
					return nil, job.Spec{}, nil, nil, err
				}
				members[r], _ = strconv.Atoi(string(p))
			}
		}
		// A member that fetched the segments itself says so with its pid
		// in its control-block slot.
		fetched, err := l.Serve(ctx, members, files, func(r int) bool { return segs.PidOf(r) == members[r] })
		if err != nil {
			segs.Close()
			return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PE %d (host %s's leader): %w", rank, host, err)
		}
		cl.Handoff = handoffSocket
		if len(members) == 0 {
			cl.Handoff = "none to hand (one PE on this host)"
		}
		if len(fetched) > 0 {
			cl.Handoff += fmt.Sprintf("; PEs %v fetched them with pidfd_getfd (the socket is not reachable from their network namespace)", fetched)
		}
		spec.JobID = segs.JobID
		return segs, spec, cl, xseg, nil
	}
	if err := c.Fence(); err != nil {
		return nil, job.Spec{}, nil, nil, err
	}
	id, err := c.Get(leader, "jobid")
	if err != nil {
		return nil, job.Spec{}, nil, nil, err
	}
	if spec.JobID, err = strconv.ParseUint(string(id), 16, 64); err != nil {
		return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PMI wire-up: job id %q from PE %d", id, leader)
	}
	lp, err := c.Get(leader, "pid")
	if err != nil {
		return nil, job.Spec{}, nil, nil, err
	}
	leaderPID, _ := strconv.Atoi(string(lp))
	// The leader listens: it published jobid after Listen.
	cl.Handoff = handoffSocket
	files, err := fdpass.Take(ctx, name, rank, leaderPID, nfiles, true)
	fetched := false
	if errors.Is(err, fdpass.ErrUnreachable) {
		// Another network namespace: take the descriptors out of the
		// leader process (the permission CMA needs).
		var fds []int
		list, gerr := c.Get(leader, "fds")
		for _, f := range strings.Split(string(list), ",") {
			if fd, err := strconv.Atoi(f); err == nil && gerr == nil {
				fds = append(fds, fd)
			}
		}
		if gerr != nil || len(fds) != nfiles {
			return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PE %d: %v; the leader's descriptors %q (%v)", rank, err, list, gerr)
		}
		ferr := err
		if files, err = fdpass.Fetch(leaderPID, fds); err != nil {
			return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PE %d cannot get its host's segments: %v; and %v; run the PEs of one host in one network namespace, or give them different SHMEM_HOST values", rank, ferr, err)
		}
		fetched = true
		cl.Handoff = fmt.Sprintf("pidfd_getfd from the leader, PE %d (pid %d): its socket is not reachable from this network namespace", leader, leaderPID)
	}
	if err != nil {
		return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PE %d: %w", rank, err)
	}
	segs, err := spec.AdoptFiles(files[0], files[1])
	if err != nil {
		if fetched && nfiles == 3 {
			files[2].Close()
		}
		return nil, job.Spec{}, nil, nil, err
	}
	if fetched {
		// The leader waits for this (Serve's took); the job id is
		// checked when the control block is mapped.
		if err := segs.SetPid(rank, os.Getpid()); err != nil {
			segs.Close()
			return nil, job.Spec{}, nil, nil, fmt.Errorf("goshmem: PE %d: telling the leader it has the segments: %w", rank, err)
		}
	}
	if nfiles == 3 {
		if xseg, err = shm.FromFile(files[2]); err != nil {
			segs.Close()
			return nil, job.Spec{}, nil, nil, err
		}
	}
	return segs, spec, cl, xseg, nil
}

// handoffSocket is Cluster.Handoff when the segments went over the
// leader's socket.
const handoffSocket = "SCM_RIGHTS over an abstract Unix socket"

// String describes the cluster for SHMEM_INFO: the launcher, the PMI
// version, the hosts with their leaders, and where the grouping came
// from.
func (cl *Cluster) String() string {
	var hosts []string
	for i, h := range cl.Hosts {
		n := 0
		for _, x := range cl.HostOf {
			if x == i {
				n++
			}
		}
		hosts = append(hosts, fmt.Sprintf("%s (%d PEs, leader PE %d)", h, n, cl.Leaders[i]))
	}
	between := "none (one host)"
	if len(cl.Hosts) > 1 {
		between = "the leaders over " + cl.Transport
	}
	return fmt.Sprintf("launcher %s over PMI-%d; %d host(s) from %s: %s; between hosts: %s; the host's segments: %s",
		cl.Launcher, cl.PMI, len(cl.Hosts), cl.Mapping, strings.Join(hosts, ", "), between, cl.Handoff)
}

// LauncherInfo describes, for oshinfo, the launcher this process's
// environment shows: a cluster launcher's PMI (PMI_FD or PMI_PORT), or
// oshrun's bootstrap, or none.
func LauncherInfo(getenv func(string) string) string {
	switch {
	case getenv(job.EnvJobID) != "":
		return "oshrun (this host's PEs share the segments oshrun created)"
	case getenv(pmi.EnvFD) != "" || getenv(pmi.EnvPort) != "":
		choice := getenv(pmi.EnvChoice)
		if choice == "" {
			choice = "auto"
		}
		return fmt.Sprintf("%s, serving PMI (%s=%s%s, rank %s of %s; SHMEM_PMI=%s): each host's lowest rank creates the segments and passes them to its host-mates",
			pmi.DetectLauncher(getenv), map[bool]string{true: pmi.EnvFD, false: pmi.EnvPort}[getenv(pmi.EnvFD) != ""],
			getenv(pmi.EnvFD), getenv(pmi.EnvPort), getenv(pmi.EnvRank), getenv(pmi.EnvSize), choice)
	}
	return "none: a program started on its own is a one-PE job; start jobs with oshrun on one host, or srun --mpi=pmi2 / mpiexec"
}

// bootID is this kernel's boot id ("" if unknown): processes that
// report the same one run on one machine.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// busyPEs is what the waiting policy counts as sharing this machine's
// CPUs in a job across hosts: the PEs of every host on this machine,
// and their leaders' transports (one per such host), whose goroutines
// sleep until a frame arrives and must then get a CPU for a PE's
// cross-host wait to end.
func (cl *Cluster) busyPEs(host int) (pes, leaders int) {
	for h := range cl.Hosts {
		if h != host && (len(cl.SameMachine) <= h || !cl.SameMachine[h]) {
			continue
		}
		leaders++
		for _, x := range cl.HostOf {
			if x == h {
				pes++
			}
		}
	}
	return pes, leaders
}
