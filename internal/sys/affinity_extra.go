package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// AffinityCPUs is how many CPUs SetAffinity and Affinity can name: CPU
// numbers from 0 to AffinityCPUs-1 (the size of the kernel's fixed
// cpu_set_t, CPU_SETSIZE, 1024).
const AffinityCPUs = 8 * int(unsafe.Sizeof(unix.CPUSet{}))
