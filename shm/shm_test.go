package shm_test

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/goshmem/goshmem/internal/sys"
	"github.com/goshmem/goshmem/shm"
)

const shmDir = "/dev/shm"

// uniqueName returns a segment name no other test (or process) uses.
func uniqueName(t *testing.T, kind shm.Kind) string {
	return fmt.Sprintf("shmtest-%d-%s-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_"), kind)
}

func listDir(t *testing.T, dir string) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("listing %s: %v", dir, err)
	}
	m := make(map[string]bool)
	for _, e := range ents {
		m[e.Name()] = true
	}
	return m
}

// needShmDir skips when /dev/shm is missing: the file kinds need it.
func needShmDir(t *testing.T) {
	t.Helper()
	if fi, err := os.Stat(shmDir); err != nil || !fi.IsDir() {
		t.Skipf("no %s directory here: %v", shmDir, err)
	}
}

// fdTarget is what /proc/self/fd says fd refers to.
func fdTarget(t *testing.T, fd int) string {
	t.Helper()
	s, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		t.Fatalf("readlink fd %d: %v", fd, err)
	}
	return s
}

func TestKindString(t *testing.T) {
	cases := []struct {
		k    shm.Kind
		want string
	}{
		{shm.Memfd, "memfd"},
		{shm.Tmpfile, "tmpfile"},
		{shm.Unlinked, "unlinked-file"},
		{shm.Kind(7), "kind(7)"},
		{shm.Kind(-1), "kind(-1)"},
	}
	for _, c := range cases {
		if got := c.k.String(); got != c.want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(c.k), got, c.want)
		}
	}
}

func TestCreateEachKind(t *testing.T) {
	needShmDir(t)
	const size = 3*4096 + 100 // not a whole number of pages
	for _, kind := range []shm.Kind{shm.Memfd, shm.Tmpfile, shm.Unlinked} {
		t.Run(kind.String(), func(t *testing.T) {
			name := uniqueName(t, kind)
			before := listDir(t, shmDir)
			s, err := shm.Create(name, size, shm.Options{Dir: shmDir, Kinds: []shm.Kind{kind}})
			if err != nil {
				t.Fatalf("Create(%s) in %s: %v", kind, shmDir, err)
			}
			defer s.Close()
			after := listDir(t, shmDir)
			for e := range after {
				if !before[e] && (strings.Contains(e, name) || strings.Contains(e, fmt.Sprintf("-%d-", os.Getpid()))) {
					t.Errorf("Create(%s) left %s/%s behind", kind, shmDir, e)
				}
			}

			if s.Kind() != kind {
				t.Errorf("Kind() = %v, want %v", s.Kind(), kind)
			}
			if s.Size() != size {
				t.Errorf("Size() = %d, want %d", s.Size(), size)
			}
			if s.Huge() {
				t.Error("Huge() = true without Options.Huge")
			}
			if s.File() == nil || s.Fd() != int(s.File().Fd()) || s.Fd() < 0 {
				t.Fatalf("File()/Fd() inconsistent: %v, %d", s.File(), s.Fd())
			}
			if got, err := sys.FileSize(s.Fd()); err != nil || got != size {
				t.Errorf("the file's size is %d (%v), want %d", got, err, size)
			}
			target := fdTarget(t, s.Fd())
			if !strings.HasSuffix(target, " (deleted)") {
				t.Errorf("fd %d refers to %q, which still has a name", s.Fd(), target)
			}
			if kind == shm.Memfd && !strings.HasPrefix(target, "/memfd:"+name) {
				t.Errorf("memfd target %q, want /memfd:%s (deleted)", target, name)
			}
			if kind != shm.Memfd && !strings.HasPrefix(target, shmDir+"/") {
				t.Errorf("%s target %q is not in %s", kind, target, shmDir)
			}

			// Two mappings of one segment share their memory.
			m1, err := s.Map(0, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer m1.Close()
			m2, err := s.Map(0, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer m2.Close()
			if m1.Len() != size || len(m1.Bytes()) != size || m2.Len() != size {
				t.Fatalf("mapping lengths %d, %d, want %d", m1.Len(), m2.Len(), size)
			}
			if &m1.Bytes()[0] == &m2.Bytes()[0] {
				t.Fatal("two Maps returned the same address range")
			}
			for i, b := range m2.Bytes() {
				if b != 0 {
					t.Fatalf("fresh segment byte %d = %d, want 0", i, b)
				}
			}
			for i := 0; i < size; i += 997 {
				m1.Bytes()[i] = byte(i%251 + 1)
			}
			m1.Bytes()[size-1] = 0xee
			for i := 0; i < size; i += 997 {
				if got := m2.Bytes()[i]; got != byte(i%251+1) {
					t.Fatalf("byte %d written via one mapping reads %d via the other, want %d", i, got, i%251+1)
				}
			}
			if m2.Bytes()[size-1] != 0xee {
				t.Fatal("last byte not shared")
			}

			// A mapping of a later page sees the same bytes.
			m3, err := s.Map(4096, 4096)
			if err != nil {
				t.Fatal(err)
			}
			defer m3.Close()
			m3.Bytes()[5] = 0x5a
			if m1.Bytes()[4096+5] != 0x5a {
				t.Fatal("Map(4096, 4096) is not the segment's second page")
			}

			// Closing the segment keeps the mappings alive.
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			m1.Bytes()[1] = 0x77
			if m2.Bytes()[1] != 0x77 {
				t.Fatal("mappings stopped sharing after Segment.Close")
			}
			if err := m3.Close(); err != nil {
				t.Fatalf("Mapping.Close: %v", err)
			}
			if m3.Bytes() != nil || m3.Len() != 0 {
				t.Fatal("a closed mapping still has bytes")
			}
			if err := m3.Close(); err != nil {
				t.Fatalf("second Mapping.Close: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("second Segment.Close: %v", err)
			}
		})
	}
}

// TestCreateBadNames: names that some kind cannot take (too long for
// memfd_create, with a NUL, or with '/', which put an Unlinked file
// outside Dir) are refused for every kind, and the longest allowed name
// works for every kind.
func TestCreateBadNames(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []shm.Kind{shm.Memfd, shm.Tmpfile, shm.Unlinked} {
		for _, name := range []string{strings.Repeat("n", shm.MaxNameLen+1), strings.Repeat("n", 250), "a\x00b", "a/b", "x/../../escape"} {
			if s, err := shm.Create(name, 4096, shm.Options{Kinds: []shm.Kind{k}, Dir: dir}); err == nil {
				s.Close()
				t.Errorf("kind %v: Create(%.20q...) succeeded, want an error", k, name)
			} else if !strings.Contains(err.Error(), "at most") {
				t.Errorf("kind %v: Create(%.20q...): %v, want an error naming the rule", k, name, err)
			}
		}
		s, err := shm.Create(strings.Repeat("n", shm.MaxNameLen), 4096, shm.Options{Kinds: []shm.Kind{k}, Dir: dir})
		if err != nil {
			t.Errorf("kind %v: the longest name: %v", k, err)
			continue
		}
		if s.Kind() != k {
			t.Errorf("kind %v: the longest name gave a %v segment", k, s.Kind())
		}
		s.Close()
	}
}

func TestCreateDefaultKindIsMemfd(t *testing.T) {
	s, err := shm.Create(uniqueName(t, shm.Memfd), 4096, shm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Kind() != shm.Memfd {
		t.Fatalf("default Kind() = %v, want memfd", s.Kind())
	}
}

func TestCreateFallsBackInOrder(t *testing.T) {
	needShmDir(t)
	// An unknown kind fails; Create goes on with the next one.
	s, err := shm.Create(uniqueName(t, shm.Tmpfile), 4096, shm.Options{Dir: shmDir, Kinds: []shm.Kind{shm.Kind(9), shm.Tmpfile}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Kind() != shm.Tmpfile {
		t.Fatalf("Kind() = %v, want tmpfile", s.Kind())
	}
}

func TestCreateErrors(t *testing.T) {
	cases := []struct {
		name string
		size int64
		opt  shm.Options
		want []string
	}{
		{"zero size", 0, shm.Options{}, []string{"size 0 must be positive"}},
		{"negative size", -1, shm.Options{}, []string{"size -1 must be positive"}},
		{"min int64", math.MinInt64, shm.Options{}, []string{"must be positive"}},
		{"unknown kind only", 4096, shm.Options{Kinds: []shm.Kind{shm.Kind(9)}}, []string{"no shared-memory kind works here", "unknown kind 9"}},
		{"tmpfile in a missing dir", 4096, shm.Options{Dir: "/nonexistent-goshmem-dir", Kinds: []shm.Kind{shm.Tmpfile}},
			[]string{"no shared-memory kind works here", "/nonexistent-goshmem-dir", "O_TMPFILE"}},
		{"unlinked in a missing dir", 4096, shm.Options{Dir: "/nonexistent-goshmem-dir", Kinds: []shm.Kind{shm.Unlinked}},
			[]string{"no shared-memory kind works here", "/nonexistent-goshmem-dir", "O_EXCL"}},
		{"huge tmpfile", 4096, shm.Options{Huge: true, Kinds: []shm.Kind{shm.Tmpfile}}, []string{"huge pages need memfd"}},
		{"huge unlinked", 4096, shm.Options{Huge: true, Kinds: []shm.Kind{shm.Unlinked}}, []string{"huge pages need memfd"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := shm.Create("errtest", c.size, c.opt)
			if err == nil {
				s.Close()
				t.Fatalf("Create(%d, %+v) succeeded", c.size, c.opt)
			}
			if s != nil {
				t.Errorf("Create returned a segment with error %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), "errtest") {
				t.Errorf("error %q does not name the segment", err)
			}
		})
	}
}

func TestMapRange(t *testing.T) {
	const size = 4 * 4096
	s, err := shm.Create(uniqueName(t, shm.Memfd), size, shm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cases := []struct {
		off, length int64
		wantLen     int  // when ok
		ok          bool //
		outside     bool // the error is the range check's
	}{
		{0, 0, size, true, false},
		{0, size, size, true, false},
		{4096, 0, size - 4096, true, false},
		{3 * 4096, 4096, 4096, true, false},
		{0, 1, 1, true, false},
		{4096, 100, 100, true, false},
		{0, size + 1, 0, false, true},
		{4096, size, 0, false, true},
		{size, 0, 0, false, true},
		{size, 1, 0, false, true},
		{size + 4096, 0, 0, false, true},
		{-4096, 4096, 0, false, true},
		{-4096, 0, 0, false, true},
		{0, -1, 0, false, true},
		{0, math.MinInt64, 0, false, true},
		// off+length overflows int64 and wraps below the size: the
		// range check must still reject it.
		{4096, math.MaxInt64 - 4095, 0, false, true},
		{4096, math.MaxInt64, 0, false, true},
		{1, 10, 0, false, false}, // not page-aligned: mmap refuses
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("off=%d,len=%d", c.off, c.length), func(t *testing.T) {
			m, err := s.Map(c.off, c.length)
			if c.ok {
				if err != nil {
					t.Fatalf("Map(%d, %d): %v", c.off, c.length, err)
				}
				defer m.Close()
				if m.Len() != c.wantLen {
					t.Fatalf("Map(%d, %d).Len() = %d, want %d", c.off, c.length, m.Len(), c.wantLen)
				}
				return
			}
			if err == nil {
				m.Close()
				t.Fatalf("Map(%d, %d) succeeded, want an error", c.off, c.length)
			}
			if m != nil {
				t.Errorf("Map returned a mapping with error %v", err)
			}
			if c.outside && !strings.Contains(err.Error(), "outside segment of 16384 bytes") {
				t.Errorf("Map(%d, %d) error %q, want the range check's \"outside segment of 16384 bytes\"", c.off, c.length, err)
			}
		})
	}
}

// After Close a Segment has no descriptor; Map must say so with an
// error rather than crash.
func TestMapAfterClose(t *testing.T) {
	s, err := shm.Create(uniqueName(t, shm.Memfd), 4096, shm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var m *shm.Mapping
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("Map on a closed segment panicked: %v", r)
			}
		}()
		m, err = s.Map(0, 0)
	}()
	if err == nil && m != nil {
		m.Close()
		t.Error("Map on a closed segment succeeded")
	}
}

func TestNilClose(t *testing.T) {
	var s *shm.Segment
	if err := s.Close(); err != nil {
		t.Errorf("(*Segment)(nil).Close() = %v", err)
	}
	var m *shm.Mapping
	if err := m.Close(); err != nil {
		t.Errorf("(*Mapping)(nil).Close() = %v", err)
	}
}

// TestFromFDClosed: a descriptor that is not open (the launcher's,
// taken by an earlier Init of the process) is an error that says so.
func TestFromFDClosed(t *testing.T) {
	s, err := shm.Create(uniqueName(t, shm.Memfd), 4096, shm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fd, err := sys.Dup(s.Fd())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	sys.Close(fd)
	_, err = shm.FromFD(fd, "goshmem-ctl")
	if err == nil || !strings.Contains(err.Error(), "is not open") || !strings.Contains(err.Error(), "joins its job once") {
		t.Errorf("FromFD of a closed descriptor: %v, want an error saying it is not open and why", err)
	}
}

// TestFromFDNotRegular: a pipe or a directory is no segment: adopting
// it fails at once (a pipe was taken as a segment of 0 bytes).
func TestFromFDNotRegular(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if s, err := shm.FromFile(r); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("FromFile(pipe) = %v, %v; want an error saying it is not a regular file", s, err)
	}
	r.Close()
	d, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if s, err := shm.FromFile(d); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("FromFile(directory) = %v, %v; want an error saying it is not a regular file", s, err)
	}
}

func TestFromFD(t *testing.T) {
	const size = 2*4096 + 7
	s, err := shm.Create(uniqueName(t, shm.Memfd), size, shm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fd, err := sys.Dup(s.Fd())
	if err != nil {
		t.Fatal(err)
	}
	a, err := shm.FromFD(fd, "adopted")
	if err != nil {
		sys.Close(fd)
		t.Fatal(err)
	}
	defer a.Close()
	if a.Fd() != fd || a.Size() != size || a.Kind() != shm.Memfd || a.Huge() {
		t.Fatalf("FromFD: fd %d size %d kind %v huge %v; want fd %d size %d memfd", a.Fd(), a.Size(), a.Kind(), a.Huge(), fd, size)
	}
	if a.File().Name() != "adopted" {
		t.Errorf("File().Name() = %q, want adopted", a.File().Name())
	}
	m1, err := s.Map(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m1.Close()
	m2, err := a.Map(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	m2.Bytes()[size-1] = 9
	m2.Bytes()[0] = 8
	if m1.Bytes()[size-1] != 9 || m1.Bytes()[0] != 8 {
		t.Fatal("the adopted descriptor does not share the segment's memory")
	}
	// Closing the adopted segment closes its (duplicated) descriptor
	// only: the original still works.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.FileSize(s.Fd()); err != nil {
		t.Fatalf("closing the adopted copy broke the original: %v", err)
	}
}

func TestFromFDBad(t *testing.T) {
	for _, fd := range []int{-1, 1 << 30} {
		s, err := shm.FromFD(fd, "ghost")
		if err == nil {
			t.Fatalf("FromFD(%d) succeeded", fd)
		}
		if s != nil {
			t.Errorf("FromFD(%d) returned a segment with error %v", fd, err)
		}
		for _, w := range []string{"ghost", fmt.Sprintf("fd %d", fd)} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("FromFD(%d) error %q does not mention %q", fd, err, w)
			}
		}
		if !errors.Is(err, sys.ErrBadFd) {
			t.Errorf("FromFD(%d) error %v is not EBADF", fd, err)
		}
	}
}

// hugePagesFree reads HugePages_Free from /proc/meminfo.
func hugePagesFree(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Skipf("no /proc/meminfo: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "HugePages_Free:" {
			n, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatalf("bad HugePages_Free line %q", sc.Text())
			}
			return n
		}
	}
	t.Skip("no HugePages_Free in /proc/meminfo (kernel without hugetlbfs)")
	return 0
}

func TestCreateHuge(t *testing.T) {
	free := hugePagesFree(t)
	const size = 1 << 20 // rounds up to one 2 MiB page
	s, err := shm.Create(uniqueName(t, shm.Memfd), size, shm.Options{Huge: true})
	if free == 0 {
		if err == nil {
			s.Close()
			t.Fatal("Create with Huge succeeded although HugePages_Free is 0")
		}
		for _, w := range []string{"nr_hugepages", "HugePages_Free", "SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES", "2097152"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not mention %q", err, w)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("Create with Huge failed although %d huge pages are free: %v", free, err)
	}
	defer s.Close()
	if !s.Huge() || s.Kind() != shm.Memfd {
		t.Errorf("Huge() = %v, Kind() = %v; want true, memfd", s.Huge(), s.Kind())
	}
	if s.Size() != shm.HugePageSize {
		t.Errorf("Size() = %d, want %d (rounded to a huge page)", s.Size(), shm.HugePageSize)
	}
	if align, err := sys.MmapAlignment(s.Fd()); err != nil || align != shm.HugePageSize {
		t.Errorf("MmapAlignment = %d, %v; want %d", align, err, shm.HugePageSize)
	}
}

func TestHugeRounding(t *testing.T) {
	if hugePagesFree(t) < 2 {
		t.Skip("needs 2 free huge pages (sysctl vm.nr_hugepages)")
	}
	for _, c := range []struct{ in, want int64 }{
		{1, shm.HugePageSize},
		{shm.HugePageSize, shm.HugePageSize},
		{shm.HugePageSize + 1, 2 * shm.HugePageSize},
	} {
		s, err := shm.Create(uniqueName(t, shm.Memfd), c.in, shm.Options{Huge: true})
		if err != nil {
			t.Fatalf("Create(%d, Huge): %v", c.in, err)
		}
		if s.Size() != c.want {
			t.Errorf("Create(%d, Huge).Size() = %d, want %d", c.in, s.Size(), c.want)
		}
		s.Close()
	}
}

func TestWordSizes(t *testing.T) {
	if shm.CacheLine != 64 {
		t.Fatalf("CacheLine = %d, want 64", shm.CacheLine)
	}
	cases := []struct {
		name        string
		size, align uintptr
	}{
		{"Uint32", unsafe.Sizeof(shm.Uint32{}), unsafe.Alignof(shm.Uint32{})},
		{"Uint64", unsafe.Sizeof(shm.Uint64{}), unsafe.Alignof(shm.Uint64{})},
	}
	for _, c := range cases {
		if c.size != shm.CacheLine {
			t.Errorf("unsafe.Sizeof(shm.%s{}) = %d, want %d", c.name, c.size, shm.CacheLine)
		}
	}
	if a := unsafe.Alignof(shm.Uint64{}); a != 8 {
		t.Errorf("Alignof(Uint64) = %d, want 8", a)
	}
	var arr [3]shm.Uint32
	if d := uintptr(unsafe.Pointer(&arr[1])) - uintptr(unsafe.Pointer(&arr[0])); d != 64 {
		t.Errorf("consecutive Uint32 words are %d bytes apart, want 64", d)
	}
}

func TestUint32Addr(t *testing.T) {
	var w shm.Uint32
	p := w.Addr()
	if uintptr(unsafe.Pointer(p)) != uintptr(unsafe.Pointer(&w)) {
		t.Fatal("Addr() is not the word's address")
	}
	w.Store(7)
	if *p != 7 {
		t.Fatalf("*Addr() = %d after Store(7)", *p)
	}
	*p = 9
	if w.Load() != 9 {
		t.Fatalf("Load() = %d after *Addr() = 9", w.Load())
	}
}

func mappedPage(t *testing.T) []byte {
	t.Helper()
	s, err := shm.Create(uniqueName(t, shm.Memfd), 4096, shm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Map(0, 0)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m.Bytes()
}

func TestView(t *testing.T) {
	b := mappedPage(t)
	w := shm.View[shm.Uint32](b, 128)
	if uintptr(unsafe.Pointer(w)) != uintptr(unsafe.Pointer(&b[128])) {
		t.Fatal("View[Uint32](b, 128) is not &b[128]")
	}
	w.Store(0x01020304)
	if b[128] != 4 || b[131] != 1 {
		t.Fatalf("View's word does not alias b: % x", b[128:132])
	}
	last := shm.View[shm.Uint64](b, 4096-64) // exactly fits
	last.Store(^uint64(0))
	if b[4096-64] != 0xff || b[4096-57] != 0xff || b[4096-56] != 0 {
		t.Fatal("View at the last line does not alias it")
	}
	if p := shm.View[uint64](b, 4088); uintptr(unsafe.Pointer(p)) != uintptr(unsafe.Pointer(&b[4088])) {
		t.Fatal("View[uint64](b, 4088)")
	}
	if p := shm.View[byte](b, 4095); p != &b[4095] {
		t.Fatal("View[byte](b, 4095)")
	}
	if p := shm.View[[0]uint64](b, 4096); p == nil {
		t.Fatal("zero-size View at the end returned nil")
	}
}

func TestViewPanics(t *testing.T) {
	b := mappedPage(t)
	cases := []struct {
		name string
		f    func()
		want string
	}{
		{"Uint32 past the end", func() { shm.View[shm.Uint32](b, 4096) }, "64 bytes at offset 4096 outside 4096-byte mapping"},
		{"Uint32 straddling the end", func() { shm.View[shm.Uint32](b, 4096-32) }, "64 bytes at offset 4064 outside 4096-byte mapping"},
		{"uint64 one byte short", func() { shm.View[uint64](b, 4089) }, "8 bytes at offset 4089 outside"},
		{"byte at len", func() { shm.View[byte](b, 4096) }, "1 bytes at offset 4096 outside"},
		{"offset wraps the address space", func() { shm.View[uint64](b, ^uintptr(0)-3) }, "outside 4096-byte mapping"},
		{"huge offset", func() { shm.View[uint32](b, 1<<62) }, "outside 4096-byte mapping"},
		{"empty mapping", func() { shm.View[uint32](nil, 0) }, "4 bytes at offset 0 outside 0-byte mapping"},
		{"misaligned uint64", func() { shm.View[uint64](b, 4) }, "offset 4 not aligned to 8"},
		{"misaligned Uint32", func() { shm.View[shm.Uint32](b, 2) }, "offset 2 not aligned to 4"},
		{"misaligned Uint64", func() { shm.View[shm.Uint64](b, 68) }, "offset 68 not aligned to 8"},
		{"misaligned slice base", func() { shm.View[uint64](b[1:], 0) }, "offset 0 not aligned to 8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatalf("no panic, want one mentioning %q", c.want)
				}
				msg := fmt.Sprint(r)
				if !strings.HasPrefix(msg, "shm.View: ") || !strings.Contains(msg, c.want) {
					t.Fatalf("panic %q, want one mentioning %q", msg, c.want)
				}
			}()
			c.f()
		})
	}
}
