package numa

import (
	"errors"
	"fmt"

	"github.com/goshmem/goshmem/internal/sys"
	"github.com/tklauser/numcpus"
)

// Allowed returns the CPUs this process may run on, ascending: the
// affinity of its main thread (sched_getaffinity of the process id),
// which is what the launcher, taskset, a batch scheduler or a cgroup
// cpuset granted, unless the main thread has been bound since.
func Allowed() ([]int, error) {
	cpus, err := sys.Affinity(sys.Getpid())
	if err != nil {
		return nil, fmt.Errorf("numa: cannot read which CPUs this process may use: %w", err)
	}
	return cpus, nil
}

// Bind binds the calling OS thread to cpus (sched_setaffinity). A
// goroutine must hold its thread with runtime.LockOSThread before it
// calls Bind, or it may move to an unbound thread afterwards.
func Bind(cpus []int) error {
	if len(cpus) == 0 {
		return errors.New("numa: cannot bind to an empty set of CPUs; name at least one CPU")
	}
	for _, c := range cpus {
		if c < 0 || c >= sys.AffinityCPUs {
			return fmt.Errorf("numa: cannot bind to CPU %d: CPU numbers go from 0 to %d; name CPUs from those this process may use", c, sys.AffinityCPUs-1)
		}
	}
	if err := sys.SetAffinity(0, cpus); err != nil {
		allowed := "unknown"
		if a, aerr := Allowed(); aerr == nil {
			allowed = FormatCPUList(a)
		}
		return fmt.Errorf("numa: cannot bind to CPUs %s: %w; name CPUs from those this process may use (%s; see taskset -p %d and the cgroup's cpuset.cpus)",
			FormatCPUList(cpus), err, allowed, sys.Getpid())
	}
	return nil
}

// NumCPUs returns how many CPUs are online and how many the kernel
// could ever bring online (possible), which bounds CPU numbers.
func NumCPUs() (online, possible int, err error) {
	if online, err = numcpus.GetOnline(); err != nil {
		return 0, 0, fmt.Errorf("numa: cannot count the online CPUs: %w; is sysfs mounted at /sys?", err)
	}
	if possible, err = numcpus.GetPossible(); err != nil {
		return 0, 0, fmt.Errorf("numa: cannot count the possible CPUs: %w; is sysfs mounted at /sys?", err)
	}
	return online, possible, nil
}
