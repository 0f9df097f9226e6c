package job

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/shm"
)

// Segments are the shared segments of a job on this node: the control
// block and one segment that holds every PE's symmetric heap, PE i's at
// offset i*Stride. One segment rather than one per PE keeps what a PE
// process inherits, and the descriptors it holds, independent of the
// number of PEs.
type Segments struct {
	JobID    uint64
	NPEs     int
	HeapSize int64 // the user's heap per PE (an upper bound after Adopt: the control block has the exact size)
	// Stride is the distance between consecutive PEs' heaps in Heaps: the
	// heap and the team pool that follows it, rounded up to whole pages
	// (huge pages when the segment has them), and for a plain memfd up
	// to MapAlign (see Create).
	Stride int64
	Ctl    *shm.Segment
	Heaps  *shm.Segment
}

// StrideFor returns the distance between consecutive heaps of heapSize
// bytes (plus the team pool) in the heaps segment, in whole pages of
// pageSize bytes.
func StrideFor(heapSize, pageSize int64) int64 {
	n := heapSize + PoolBytes
	return (n + pageSize - 1) / pageSize * pageSize
}

// CreateOptions tune Create.
type CreateOptions struct {
	Huge bool       // back heaps with huge pages
	Dir  string     // tmpfs directory for file fallbacks
	Kind []shm.Kind // restrict segment kinds (tests)
}

// Create makes the control segment (initialized) and the heaps segment
// for npes heaps of heapSize bytes each. It fails, with a message that
// says what to do, when the heaps cannot all be backed.
func Create(npes int, heapSize int64, opt CreateOptions) (*Segments, error) {
	if npes < 1 {
		return nil, fmt.Errorf("goshmem: a job needs at least one PE, got %d", npes)
	}
	heap, seg, err := SegmentSize(heapSize, opt.Huge)
	if err != nil {
		return nil, err
	}
	if err := checkBacking(int64(npes), seg, heapSize); err != nil {
		return nil, err
	}
	var idb [8]byte
	rand.Read(idb[:])
	s := &Segments{JobID: binary.LittleEndian.Uint64(idb[:]), NPEs: npes, HeapSize: heapSize}
	sopt := shm.Options{Dir: opt.Dir, Kinds: opt.Kind}
	l := LayoutFor(npes)
	ctl, err := shm.Create(fmt.Sprintf("goshmem-ctl-%x", s.JobID), l.Size, sopt)
	if err != nil {
		return nil, err
	}
	s.Ctl = ctl
	m, err := ctl.Map(0, 0)
	if err != nil {
		s.Close()
		return nil, err
	}
	_, err = OpenControl(m.Bytes(), npes, uint64(heap), s.JobID, true)
	m.Close()
	if err != nil {
		s.Close()
		return nil, err
	}
	sopt.Huge = opt.Huge
	page := int64(os.Getpagesize())
	if opt.Huge {
		page = shm.HugePageSize
	}
	s.HeapSize = heap
	s.Stride = StrideFor(heap, page) // seg, or seg rounded up to whole pages
	// A memfd without huge pages is sparse: padding each stride to the
	// alignment at which every process maps every heap (MapAlign) costs
	// no memory, and lets a process map the whole segment with one mmap
	// (one mapping of the file per process, not one per PE). Huge pages
	// and file fallbacks reserve their blocks, so they are not padded.
	stride := s.Stride
	if !opt.Huge {
		stride = roundUp(s.Stride, MapAlign(heap))
	}
	if stride > math.MaxInt64/int64(npes) {
		s.Close()
		return nil, fmt.Errorf("goshmem: %d heaps of %d bytes overflow; lower SHMEM_SYMMETRIC_SIZE", npes, stride)
	}
	// The team pools follow the users' heaps in the same segment.
	name := fmt.Sprintf("goshmem-heaps-%x", s.JobID)
	h, err := shm.Create(name, int64(npes)*stride, sopt)
	if err == nil && stride != s.Stride && h.Kind() != shm.Memfd {
		kind := h.Kind()
		h.Close()
		sopt.Kinds = []shm.Kind{kind}
		h, err = shm.Create(name, int64(npes)*s.Stride, sopt)
	} else {
		s.Stride = stride
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	s.Heaps = h
	return s, nil
}

// MapAlign is the alignment of the address at which every process maps
// every heap of heapSize bytes: the smallest power of two that holds
// the heap, between 2 MiB (which also lets the kernel use huge pages)
// and MaxMapAlign. An offset aligned to up to that many bytes is
// aligned in every PE's mapping, which is what Align needs.
func MapAlign(heapSize int64) int64 {
	a := int64(2 << 20)
	for a < heapSize && a < MaxMapAlign {
		a <<= 1
	}
	return a
}

// MaxMapAlign is the largest alignment at which a process maps a heap
// segment (node maps a heap at the smallest power of two that holds it,
// from 2 MiB up to this); mapping it reserves the segment's size plus
// this much address space.
const MaxMapAlign = 1 << 30

// SegmentSize returns, for a heap of heapSize bytes per PE, the user's
// heap as the job has it (rounded up to whole huge pages when huge) and
// the size of each heap segment (that heap, then the team pool, rounded
// up to whole huge pages when huge). It refuses, naming
// SHMEM_SYMMETRIC_SIZE, a size that is not positive or above
// env.MaxSymmetricSize, which bounds every size derived from it (the
// segment, plus MaxMapAlign of address space to map it aligned) far
// below overflow.
func SegmentSize(heapSize int64, huge bool) (heap, seg int64, err error) {
	if heapSize <= 0 {
		return 0, 0, fmt.Errorf("goshmem: symmetric heap size %d: the size must be positive; set SHMEM_SYMMETRIC_SIZE", heapSize)
	}
	if heapSize > env.MaxSymmetricSize {
		return 0, 0, fmt.Errorf("goshmem: symmetric heap size %d bytes per PE is above goshmem's maximum of %d bytes (256t, more than any machine's memory); "+
			"lower SHMEM_SYMMETRIC_SIZE (Config.HeapSize)", heapSize, int64(env.MaxSymmetricSize))
	}
	// Whole cache lines, the allocator's granule: the heap must hold at
	// least the bytes asked for (OpenSHMEM 1.5: "at least as large as
	// the integer ceiling"), and an allocator that rounds its size down
	// to a line left a 4097-byte heap unable to hold 4097 bytes.
	heap = roundUp(heapSize, shm.CacheLine)
	seg = heap + PoolBytes
	if huge {
		heap = roundUp(heap, shm.HugePageSize)
		seg = roundUp(heap+PoolBytes, shm.HugePageSize)
	}
	return heap, seg, nil
}

// roundUp rounds n up to a multiple of the power of two a.
func roundUp(n, a int64) int64 { return (n + a - 1) &^ (a - 1) }

// Close releases every descriptor (mappings stay valid).
func (s *Segments) Close() {
	s.Ctl.Close()
	s.Heaps.Close()
}

// HeapOffset returns where PE pe's heap starts in the heaps segment.
func (s *Segments) HeapOffset(pe int) int64 { return int64(pe) * s.Stride }

// Files returns the segments in the order a PE process inherits them
// (os/exec ExtraFiles: control at FirstFD, the heaps after it).
func (s *Segments) Files() []*os.File {
	return []*os.File{s.Ctl.File(), s.Heaps.File()}
}

// Env returns the environment entries for a process hosting PEs
// [firstPE, firstPE+localPEs).
func (s *Segments) Env(firstPE, localPEs int) []string {
	return []string{
		EnvJobID + "=" + strconv.FormatUint(s.JobID, 16),
		EnvNPEs + "=" + strconv.Itoa(s.NPEs),
		EnvPE + "=" + strconv.Itoa(firstPE),
		EnvLocalPEs + "=" + strconv.Itoa(localPEs),
		EnvFD + "=" + strconv.Itoa(FirstFD),
		EnvLauncher + "=" + strconv.Itoa(os.Getpid()),
	}
}

// Spec is what a PE process learns from its environment.
type Spec struct {
	JobID       uint64
	NPEs        int
	FirstPE     int
	LocalPEs    int
	FD          int
	LauncherPid int
}

// SpecFromEnv reads the bootstrap variables through getenv. ok is false
// when the process was not started by a launcher.
func SpecFromEnv(getenv func(string) string) (spec Spec, ok bool, err error) {
	id := getenv(EnvJobID)
	if id == "" {
		return Spec{}, false, nil
	}
	bad := func(name, v string) error {
		return fmt.Errorf("goshmem: bad launcher variable %s=%q; start PEs with oshrun, not by setting GOSHMEM_* by hand", name, v)
	}
	if spec.JobID, err = strconv.ParseUint(id, 16, 64); err != nil {
		return spec, true, bad(EnvJobID, id)
	}
	ints := []struct {
		name string
		dst  *int
		min  int
	}{{EnvNPEs, &spec.NPEs, 1}, {EnvPE, &spec.FirstPE, 0}, {EnvLocalPEs, &spec.LocalPEs, 1}, {EnvFD, &spec.FD, 0}}
	for _, v := range ints {
		s := getenv(v.name)
		n, err := strconv.Atoi(s)
		if err != nil || n < v.min {
			return spec, true, bad(v.name, s)
		}
		*v.dst = n
	}
	if spec.FirstPE >= spec.NPEs || spec.LocalPEs > spec.NPEs-spec.FirstPE {
		return spec, true, bad(EnvLocalPEs, getenv(EnvLocalPEs))
	}
	spec.LauncherPid, _ = strconv.Atoi(getenv(EnvLauncher))
	return spec, true, nil
}

// Adopt takes over the inherited descriptors described by spec.
func (spec Spec) Adopt() (*Segments, error) {
	ctl, err := shm.FromFD(spec.FD, "goshmem-ctl")
	if err != nil {
		return nil, err
	}
	h, err := shm.FromFD(spec.FD+1, "goshmem-heaps")
	if err != nil {
		ctl.Close()
		return nil, err
	}
	return spec.adopt(ctl, h, fmt.Sprintf("the inherited heaps segment (fd %d)", spec.FD+1))
}

// AdoptFiles takes over the control and heaps segments received as
// files (from the host's leader, under a cluster launcher); spec.FD is
// not used.
func (spec Spec) AdoptFiles(ctl, heaps *os.File) (*Segments, error) {
	c, err := shm.FromFile(ctl)
	if err != nil {
		heaps.Close()
		return nil, err
	}
	h, err := shm.FromFile(heaps)
	if err != nil {
		c.Close()
		return nil, err
	}
	return spec.adopt(c, h, "the heaps segment from the host leader")
}

func (spec Spec) adopt(ctl, h *shm.Segment, what string) (*Segments, error) {
	s := &Segments{JobID: spec.JobID, NPEs: spec.NPEs, Ctl: ctl, Heaps: h}
	if h.Size() <= 0 || h.Size()%int64(spec.NPEs) != 0 || h.Size()/int64(spec.NPEs) <= PoolBytes {
		s.Close()
		return nil, fmt.Errorf("goshmem: %s has %d bytes, not a heap for each of %d PEs; start PEs with oshrun, srun or mpiexec", what, h.Size(), spec.NPEs)
	}
	// The user's heap size is in the control block's header (the
	// stride also holds the team pool, and is rounded up to whole
	// pages); node reads it there.
	s.Stride = h.Size() / int64(spec.NPEs)
	s.HeapSize = s.Stride - PoolBytes
	return s, nil
}

// SetPid stores pid as PE pe's process in its control-block slot
// through the segment's file, before anything is mapped (a member that
// took the segments with fdpass.Fetch tells its leader so; mapping the
// control block later stores the same value).
func (s *Segments) SetPid(pe, pid int) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(pid))
	_, err := s.Ctl.File().WriteAt(b[:], s.pidOff(pe))
	return err
}

// pidOff is the offset of PE pe's Slot.Pid in the control segment
// (Slot.Pid is the slot's first word: TestFieldLines).
func (s *Segments) pidOff(pe int) int64 { return int64(LayoutFor(s.NPEs).slotOff(pe)) }

// PidOf reads PE pe's process from its control-block slot through the
// segment's file: 0 until the process has stored it.
func (s *Segments) PidOf(pe int) int {
	var b [4]byte
	if _, err := s.Ctl.File().ReadAt(b[:], s.pidOff(pe)); err != nil {
		return 0
	}
	return int(int32(binary.LittleEndian.Uint32(b[:])))
}

// CheckBacking fails when npes heaps of heapSize bytes cannot all be
// backed by this machine's memory and swap, or by the memory limit of
// this process's cgroup. Heaps are backed lazily, so passing this check
// does not reserve memory; it rules out jobs that cannot fit at all.
func CheckBacking(npes, heapSize int64) error { return checkBacking(npes, heapSize, heapSize) }

// checkBacking is CheckBacking for segments of seg bytes that hold a
// user's heap of heapSize bytes (the size the messages name).
func checkBacking(npes, seg, heapSize int64) error {
	total := npes * seg
	if seg > 0 && total/seg != npes {
		return fmt.Errorf("goshmem: %d heaps of %d bytes overflow; lower SHMEM_SYMMETRIC_SIZE", npes, heapSize)
	}
	limit, what := memoryLimit()
	if limit > 0 && total > limit {
		pools := ""
		if seg != heapSize {
			pools = fmt.Sprintf(" (%d bytes with the team pools)", total)
		}
		return fmt.Errorf("goshmem: %d PEs x SHMEM_SYMMETRIC_SIZE=%s = %s of symmetric heap%s, but %s allows only %s; "+
			"lower SHMEM_SYMMETRIC_SIZE or start fewer PEs", npes, env.FormatSize(uint64(heapSize)), env.FormatSize(uint64(npes*heapSize)), pools, what, env.FormatSize(uint64(limit)))
	}
	return nil
}

func memoryLimit() (int64, string) {
	var limit int64
	what := ""
	if f, err := os.Open("/proc/meminfo"); err == nil {
		var memTotal, swapTotal int64
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 {
				continue
			}
			v, _ := strconv.ParseInt(fields[1], 10, 64)
			switch fields[0] {
			case "MemTotal:":
				memTotal = v * 1024
			case "SwapTotal:":
				swapTotal = v * 1024
			}
		}
		f.Close()
		limit, what = memTotal+swapTotal, "this machine's memory and swap"
	}
	if cg := cgroupLimit(); cg > 0 && (limit == 0 || cg < limit) {
		limit, what = cg, "this cgroup's memory.max"
	}
	return limit, what
}

func cgroupLimit() int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok {
			v, err := os.ReadFile("/sys/fs/cgroup" + strings.TrimSpace(path) + "/memory.max")
			if err != nil {
				return 0
			}
			n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
			if err != nil {
				return 0 // "max"
			}
			return n
		}
	}
	return 0
}
