package job_test

import (
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/shm"
)

const mib = 1 << 20

func TestCreateFilesEnv(t *testing.T) {
	const npes = 3
	s, err := job.Create(npes, mib, job.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// 1 MiB and the 2 MiB pool, padded to a multiple of the 2 MiB at
	// which every process maps every heap (a sparse memfd: the padding
	// costs no memory).
	stride := int64(4 * mib)
	if s.NPEs != npes || s.HeapSize != mib || s.Stride != stride || s.Heaps == nil || s.Ctl == nil {
		t.Fatalf("Create(3, 1 MiB) = NPEs %d HeapSize %d stride %d, heaps %v, ctl %v", s.NPEs, s.HeapSize, s.Stride, s.Heaps, s.Ctl)
	}
	if s.Ctl.Size() != job.LayoutFor(npes).Size {
		t.Errorf("control segment is %d bytes, want %d", s.Ctl.Size(), job.LayoutFor(npes).Size)
	}
	// One segment holds every heap, each followed by its team pool.
	if h := s.Heaps; h.Size() != npes*stride || h.Kind() != shm.Memfd || h.Huge() {
		t.Errorf("heaps segment: size %d (want %d) kind %v huge %v", h.Size(), npes*stride, h.Kind(), h.Huge())
	}
	for pe := range npes {
		if got := s.HeapOffset(pe); got != int64(pe)*stride {
			t.Errorf("HeapOffset(%d) = %d, want %d", pe, got, int64(pe)*stride)
		}
	}

	files := s.Files()
	if len(files) != 2 || files[0] != s.Ctl.File() || files[1] != s.Heaps.File() {
		t.Fatalf("Files() = %v, want the control and the heaps segment", files)
	}
	if files[0].Fd() == files[1].Fd() {
		t.Errorf("Files() repeats fd %d", files[0].Fd())
	}

	// The control block is initialized for this job.
	m, err := s.Ctl.Map(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c, err := job.OpenControl(m.Bytes(), npes, mib, s.JobID, false)
	if err != nil {
		t.Fatalf("the created control segment does not open: %v", err)
	}
	if c.Header.JobID != s.JobID || c.Header.HeapSize != mib || c.Header.NPEs != npes {
		t.Errorf("header (id %x, heap %d, %d PEs) does not describe the job (id %x)", c.Header.JobID, c.Header.HeapSize, c.Header.NPEs, s.JobID)
	}

	got := s.Env(1, 2)
	want := []string{
		"GOSHMEM_JOB_ID=" + strconv.FormatUint(s.JobID, 16),
		"GOSHMEM_NPES=3",
		"GOSHMEM_PE=1",
		"GOSHMEM_LOCAL_PES=2",
		"GOSHMEM_FD=3",
		"GOSHMEM_LAUNCHER_PID=" + strconv.Itoa(os.Getpid()),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Env(1, 2) = %q, want %q", got, want)
	}

	// What Env writes, SpecFromEnv reads back.
	vars := map[string]string{}
	for _, kv := range got {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	spec, ok, err := job.SpecFromEnv(func(k string) string { return vars[k] })
	wantSpec := job.Spec{JobID: s.JobID, NPEs: 3, FirstPE: 1, LocalPEs: 2, FD: job.FirstFD, LauncherPid: os.Getpid()}
	if err != nil || !ok || spec != wantSpec {
		t.Errorf("SpecFromEnv(Env(1, 2)) = %+v, %v, %v; want %+v", spec, ok, err, wantSpec)
	}

	// Two jobs get different ids.
	s2, err := job.Create(1, 4096, job.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.JobID == s.JobID {
		t.Errorf("two jobs got the same id %x", s.JobID)
	}
}

// freeFDRange finds n consecutive unused descriptors at or above 512.
func freeFDRange(t *testing.T, n int) int {
	t.Helper()
	for base := 512; base < 4096; base += 64 {
		free := true
		for fd := base; fd < base+n; fd++ {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
				free = false
				break
			}
		}
		if free {
			return base
		}
	}
	t.Skip("no free descriptor range")
	return 0
}

// TestCreateAdopt plays launcher and PE in one process: it puts the
// segments at consecutive descriptors, as os/exec ExtraFiles would,
// and adopts them from the environment.
func TestCreateAdopt(t *testing.T) {
	const npes = 3
	s, err := job.Create(npes, mib, job.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	files := s.Files()
	base := freeFDRange(t, len(files))
	for i, f := range files {
		if err := unix.Dup3(int(f.Fd()), base+i, unix.O_CLOEXEC); err != nil {
			for j := 0; j < i; j++ {
				sys.Close(base + j)
			}
			t.Fatalf("dup3: %v", err)
		}
	}
	vars := map[string]string{}
	for _, kv := range s.Env(0, npes) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	vars[job.EnvFD] = strconv.Itoa(base)
	spec, ok, err := job.SpecFromEnv(func(k string) string { return vars[k] })
	if err != nil || !ok {
		t.Fatalf("SpecFromEnv: %v, %v", ok, err)
	}
	a, err := spec.Adopt()
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	defer a.Close()
	// HeapSize after Adopt is an upper bound (the control block has the
	// exact size): the stride less the team pool.
	if a.JobID != s.JobID || a.NPEs != npes || a.HeapSize < mib || a.HeapSize != s.Stride-job.PoolBytes || a.Stride != s.Stride {
		t.Fatalf("Adopt = id %x npes %d heap %d stride %d; want id %x npes 3 heap %d stride %d",
			a.JobID, a.NPEs, a.HeapSize, a.Stride, s.JobID, mib, s.Stride)
	}
	if a.Ctl.Fd() != base || a.Ctl.Size() != job.LayoutFor(npes).Size {
		t.Errorf("adopted control: fd %d size %d", a.Ctl.Fd(), a.Ctl.Size())
	}
	if a.Heaps.Fd() != base+1 {
		t.Errorf("adopted heaps segment has fd %d, want %d", a.Heaps.Fd(), base+1)
	}
	// Same file as the launcher's heaps segment.
	d1, i1, _ := sys.FileID(a.Heaps.Fd())
	d2, i2, _ := sys.FileID(s.Heaps.Fd())
	if d1 != d2 || i1 != i2 {
		t.Errorf("the adopted heaps segment is not the launcher's")
	}
	// The PE side sees what the launcher side writes.
	lm, err := s.Heaps.Map(s.HeapOffset(2), s.Stride)
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	pm, err := a.Heaps.Map(a.HeapOffset(2), a.Stride)
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	lm.Bytes()[mib-1] = 0x42
	if pm.Bytes()[mib-1] != 0x42 {
		t.Fatal("adopted heap 2 does not share memory with the created one")
	}
	cm, err := a.Ctl.Map(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Close()
	c, err := job.OpenControl(cm.Bytes(), spec.NPEs, uint64(a.HeapSize), spec.JobID, false)
	if err != nil {
		t.Fatalf("OpenControl on the adopted control segment: %v", err)
	}
	if c.Header.JobID != spec.JobID {
		t.Errorf("header job id %x, environment says %x", c.Header.JobID, spec.JobID)
	}
	// SetPid through one side's file is what the other reads through
	// its file and in the mapped slot.
	if got := s.PidOf(1); got != 0 {
		t.Errorf("PidOf(1) before SetPid: %d", got)
	}
	if err := a.SetPid(1, 4321); err != nil {
		t.Fatal(err)
	}
	if got := s.PidOf(1); got != 4321 {
		t.Errorf("PidOf(1) after SetPid(1, 4321): %d", got)
	}
	if got := c.Slot(1).Pid.Load(); got != 4321 || c.Slot(0).Pid.Load() != 0 || c.Slot(2).Pid.Load() != 0 {
		t.Errorf("slots' pids after SetPid(1, 4321): %d %d %d", c.Slot(0).Pid.Load(), got, c.Slot(2).Pid.Load())
	}
	// Another job's control block is refused.
	if _, err := job.OpenControl(cm.Bytes(), spec.NPEs, uint64(a.HeapSize), spec.JobID+1, false); err == nil || !strings.Contains(err.Error(), "belongs to job") {
		t.Errorf("OpenControl with another job id: %v", err)
	}
}

func TestAdoptBadFD(t *testing.T) {
	base := freeFDRange(t, 4)
	spec := job.Spec{JobID: 1, NPEs: 3, FirstPE: 0, LocalPEs: 3, FD: base}
	if a, err := spec.Adopt(); err == nil {
		a.Close()
		t.Fatal("Adopt succeeded on closed descriptors")
	} else if !strings.Contains(err.Error(), "goshmem-ctl") || !strings.Contains(err.Error(), "fd "+strconv.Itoa(base)) {
		t.Errorf("Adopt error %q does not name the control segment and its fd", err)
	}

	// A control segment but no heaps segment: the error names it,
	// and the control descriptor is released.
	seg, err := shm.Create("adopt-ctl", 4096, shm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	if err := unix.Dup3(seg.Fd(), base, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	a, err := spec.Adopt()
	if err == nil {
		a.Close()
		t.Fatal("Adopt succeeded without heap descriptors")
	}
	if !strings.Contains(err.Error(), "goshmem-heaps") || !strings.Contains(err.Error(), "fd "+strconv.Itoa(base+1)) {
		t.Errorf("Adopt error %q does not name the heaps segment and its fd", err)
	}
	if _, err := unix.FcntlInt(uintptr(base), unix.F_GETFD, 0); err != unix.EBADF {
		sys.Close(base)
		t.Error("a failed Adopt left the control descriptor open")
	}
}

func TestCreateErrors(t *testing.T) {
	cases := []struct {
		name     string
		npes     int
		heapSize int64
		want     []string
	}{
		{"no PEs", 0, mib, []string{"at least one PE, got 0"}},
		{"negative PEs", -2, mib, []string{"at least one PE, got -2"}},
		{"zero heap", 2, 0, []string{"must be positive"}},
		{"negative heap", 2, -mib, []string{"must be positive"}},
		{"absurd heaps", 1 << 20, 1 << 40, []string{"SHMEM_SYMMETRIC_SIZE", "lower SHMEM_SYMMETRIC_SIZE or start fewer PEs"}},
		{"overflowing heaps", 1 << 40, 1 << 40, []string{"overflow", "SHMEM_SYMMETRIC_SIZE"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := job.Create(c.npes, c.heapSize, job.CreateOptions{})
			if err == nil {
				s.Close()
				t.Fatalf("Create(%d, %d) succeeded", c.npes, c.heapSize)
			}
			if s != nil {
				t.Errorf("Create returned segments with error %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestCheckBacking(t *testing.T) {
	cases := []struct {
		npes, heapSize int64
		ok             bool
		want           []string
	}{
		{1, 1, true, nil},
		{3, mib, true, nil},
		{1, 0, true, nil},
		{1 << 20, 1 << 40, false, []string{"1048576 PEs x SHMEM_SYMMETRIC_SIZE=1099511627776 bytes (1 TiB) = 1152921504606846976 bytes (1 EiB)", "allows only"}},
		{1, math.MaxInt64, false, []string{"SHMEM_SYMMETRIC_SIZE=9223372036854775807", "allows only"}},
		{2, math.MaxInt64, false, []string{"2 heaps of 9223372036854775807 bytes overflow; lower SHMEM_SYMMETRIC_SIZE"}},
		{1 << 40, 1 << 40, false, []string{"overflow", "SHMEM_SYMMETRIC_SIZE"}},
		{math.MaxInt64, 2, false, []string{"overflow", "SHMEM_SYMMETRIC_SIZE"}},
		{1 << 32, 1 << 32, false, []string{"overflow"}}, // exactly 2^64
		{1 << 31, 1 << 32, false, []string{"overflow"}}, // 2^63 wraps to MinInt64
	}
	for _, c := range cases {
		err := job.CheckBacking(c.npes, c.heapSize)
		if c.ok {
			if err != nil {
				t.Errorf("CheckBacking(%d, %d) = %v, want nil", c.npes, c.heapSize, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("CheckBacking(%d, %d) = nil, want an error", c.npes, c.heapSize)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("CheckBacking(%d, %d) = %q, does not mention %q", c.npes, c.heapSize, err, w)
			}
		}
	}
}

// TestFilesIndependentOfNPEs: what a PE process inherits (and so the
// descriptors and start-up work of every process) does not grow with
// the number of PEs; one descriptor per heap made a job's start-up
// quadratic in its size.
func TestFilesIndependentOfNPEs(t *testing.T) {
	for _, npes := range []int{1, 8, 256} {
		s, err := job.Create(npes, 64<<10, job.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(s.Files()); n != 2 {
			t.Errorf("%d PEs: a PE process inherits %d descriptors, want 2 whatever the number of PEs", npes, n)
		}
		s.Close()
	}
}

// TestSegmentSize: the heap and segment sizes derived from a heap size,
// and the refusal, naming SHMEM_SYMMETRIC_SIZE, of sizes out of range.
func TestSegmentSize(t *testing.T) {
	const huge = shm.HugePageSize
	for _, tc := range []struct {
		size      int64
		huge      bool
		heap, seg int64
		err       []string
	}{
		{size: 1, heap: 64, seg: 64 + job.PoolBytes}, // whole cache lines, the allocator's granule
		{size: 4097, heap: 4160, seg: 4160 + job.PoolBytes},
		{size: 4096, heap: 4096, seg: 4096 + job.PoolBytes},
		{size: mib, heap: mib, seg: mib + job.PoolBytes},
		{size: 1, huge: true, heap: huge, seg: 2 * huge},
		{size: huge, huge: true, heap: huge, seg: 2 * huge},
		{size: huge + 1, huge: true, heap: 2 * huge, seg: 3 * huge},
		{size: env.MaxSymmetricSize, heap: env.MaxSymmetricSize, seg: env.MaxSymmetricSize + job.PoolBytes},
		{size: env.MaxSymmetricSize, huge: true, heap: env.MaxSymmetricSize, seg: env.MaxSymmetricSize + huge},
		{size: 0, err: []string{"must be positive", "SHMEM_SYMMETRIC_SIZE"}},
		{size: -1, huge: true, err: []string{"must be positive", "SHMEM_SYMMETRIC_SIZE"}},
		{size: env.MaxSymmetricSize + 1, err: []string{"281474976710657 bytes per PE is above goshmem's maximum", "lower SHMEM_SYMMETRIC_SIZE"}},
		{size: math.MaxInt64, huge: true, err: []string{"9223372036854775807 bytes per PE is above", "lower SHMEM_SYMMETRIC_SIZE"}},
		{size: math.MaxInt64 - job.PoolBytes + 1, err: []string{"is above", "lower SHMEM_SYMMETRIC_SIZE"}},
	} {
		heap, seg, err := job.SegmentSize(tc.size, tc.huge)
		if tc.err != nil {
			if err == nil {
				t.Errorf("SegmentSize(%d, %v) = %d, %d; want an error", tc.size, tc.huge, heap, seg)
				continue
			}
			for _, w := range tc.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("SegmentSize(%d, %v) = %q, does not mention %q", tc.size, tc.huge, err, w)
				}
			}
			continue
		}
		if err != nil || heap != tc.heap || seg != tc.seg {
			t.Errorf("SegmentSize(%d, %v) = %d, %d, %v; want %d, %d", tc.size, tc.huge, heap, seg, err, tc.heap, tc.seg)
		}
	}
}

// TestCreateTooLarge: a heap size the runtime cannot use fails Create
// with a message that names SHMEM_SYMMETRIC_SIZE and says to lower it,
// not with a wrapped, negative size from deeper down.
func TestCreateTooLarge(t *testing.T) {
	sizes := []int64{math.MaxInt64, math.MaxInt64 - job.PoolBytes + 1, env.MaxSymmetricSize + 1}
	if job.CheckBacking(1, env.MaxSymmetricSize) != nil {
		// Accepted by the parser, but more than this machine has.
		sizes = append(sizes, env.MaxSymmetricSize)
	}
	for _, size := range sizes {
		for _, huge := range []bool{false, true} {
			s, err := job.Create(1, size, job.CreateOptions{Huge: huge})
			if err == nil {
				s.Close()
				t.Errorf("Create(1, %d, huge %v) succeeded", size, huge)
				continue
			}
			msg := err.Error()
			if !strings.Contains(msg, "lower SHMEM_SYMMETRIC_SIZE") || strings.Contains(msg, " -") {
				t.Errorf("Create(1, %d, huge %v) = %q; want it to say to lower SHMEM_SYMMETRIC_SIZE, with no wrapped size", size, huge, msg)
			}
		}
	}
}

// FuzzHeapSize: every SHMEM_SYMMETRIC_SIZE the parser accepts can be
// turned into heap and segment sizes, and the segment mapped at the
// largest alignment, without overflow; every value it refuses is
// refused with the variable named.
func FuzzHeapSize(f *testing.F) {
	for _, s := range []string{"1", "512M", "1.5g", "256t", "255.99999t", "256.0000001t", "8388607t",
		"9223372036854775807", "281474976710656", "281474976710657", "0", "-1", "1e3", "0.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		c, err := env.Load(func(name string) string {
			if name == env.VarSymmetricSize {
				return v
			}
			return ""
		})
		if err != nil {
			var e *env.Error
			if !errors.As(err, &e) || e.Name != env.VarSymmetricSize || e.Accept == "" {
				t.Fatalf("SHMEM_SYMMETRIC_SIZE=%q refused by %v, which does not name the variable", v, err)
			}
			return
		}
		size := c.SymmetricSize
		for _, huge := range []bool{false, true} {
			heap, seg, err := job.SegmentSize(size, huge)
			if err != nil {
				t.Fatalf("SHMEM_SYMMETRIC_SIZE=%q (%d bytes) is accepted by the parser but SegmentSize(huge %v) refuses it: %v", v, size, huge, err)
			}
			if heap < size || seg < heap+job.PoolBytes || seg-size > 2*shm.HugePageSize+job.PoolBytes {
				t.Fatalf("SegmentSize(%d, %v) = %d, %d: not the heap rounded up plus the pool", size, huge, heap, seg)
			}
			if heap%shm.CacheLine != 0 {
				t.Fatalf("SegmentSize(%d, %v) = %d, %d: the heap is not whole cache lines (the allocator's granule)", size, huge, heap, seg)
			}
			if huge && (heap%shm.HugePageSize != 0 || seg%shm.HugePageSize != 0) {
				t.Fatalf("SegmentSize(%d, huge) = %d, %d: not whole huge pages", size, heap, seg)
			}
			// Mapping a segment reserves its size plus up to
			// MaxMapAlign of address space: that sum must fit.
			if seg > math.MaxInt64-job.MaxMapAlign {
				t.Fatalf("SegmentSize(%d, %v) = %d leaves no room to reserve it at %d-byte alignment", size, huge, seg, job.MaxMapAlign)
			}
		}
	})
}
