// Package shm provides shared-memory segments for goshmem: anonymous
// memfd (or unnamed tmpfs) files that PEs inherit from the launcher and
// map, optional huge pages, a check at creation that the segment can be
// backed, and typed, cache-line padded atomic words to lay out in them.
//
// A Segment owns a file descriptor; a Mapping owns an address range.
// Both have Close. Nothing a Segment creates has a name in any file
// system after Create returns, so nothing can be left behind when a job
// dies, however it dies.
package shm

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/edsrzf/mmap-go"
	"github.com/goshmem/goshmem/internal/sys"
)

// Kind says how a segment's memory was created.
type Kind int

const (
	// Memfd: memfd_create(2), the preferred kind.
	Memfd Kind = iota
	// Tmpfile: an O_TMPFILE file in a tmpfs directory (/dev/shm).
	Tmpfile
	// Unlinked: a file created with O_EXCL, mode 0600, and unlinked at once.
	Unlinked
)

func (k Kind) String() string {
	switch k {
	case Memfd:
		return "memfd"
	case Tmpfile:
		return "tmpfile"
	case Unlinked:
		return "unlinked-file"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// HugePageSize is the default huge page size segments round up to when
// huge pages are requested.
const HugePageSize = 2 << 20

// Options tune Create.
type Options struct {
	// Huge backs the segment with huge pages (MFD_HUGETLB). Create fails
	// if the pool cannot hold it.
	Huge bool
	// Dir is the tmpfs directory for the file fallbacks (default /dev/shm).
	Dir string
	// Kinds restricts the kinds Create may try, in order (default:
	// Memfd, Tmpfile, Unlinked).
	Kinds []Kind
}

// Segment is a shared-memory file. It is safe to Close it after mapping:
// the mapping keeps the memory alive.
type Segment struct {
	f    *os.File
	size int64
	kind Kind
	huge bool
}

// MaxNameLen is the longest name Create takes (memfd_create takes 249
// bytes; the Unlinked kind's file name adds a prefix to it).
const MaxNameLen = 200

// Create makes a segment of size bytes named name (the name is only a
// label for /proc/PID/maps and error messages; nothing is created in a
// file system that outlives Create). The name is at most MaxNameLen
// bytes, without '/' or NUL, so every kind takes the same names.
func Create(name string, size int64, opt Options) (*Segment, error) {
	if size <= 0 {
		return nil, fmt.Errorf("shm.Create %s: size %d must be positive", name, size)
	}
	if len(name) > MaxNameLen || strings.ContainsAny(name, "/\x00") {
		return nil, fmt.Errorf("shm.Create %q: a name is at most %d bytes, without '/' or NUL (memfd_create's limit, and a file name in Dir)", name, MaxNameLen)
	}
	if opt.Huge {
		if size > math.MaxInt64-(HugePageSize-1) {
			return nil, fmt.Errorf("shm.Create %s: size %d cannot be rounded up to whole %d-byte huge pages (it would exceed %d bytes)", name, size, HugePageSize, int64(math.MaxInt64))
		}
		size = (size + HugePageSize - 1) &^ (HugePageSize - 1)
	}
	dir := opt.Dir
	if dir == "" {
		dir = "/dev/shm"
	}
	kinds := opt.Kinds
	if len(kinds) == 0 {
		kinds = []Kind{Memfd, Tmpfile, Unlinked}
	}
	var errs []error
	for _, k := range kinds {
		var fd int
		var err error
		switch k {
		case Memfd:
			fd, err = sys.MemfdCreate(name, opt.Huge)
		case Tmpfile:
			if opt.Huge {
				err = errors.New("huge pages need memfd")
				break
			}
			fd, err = sys.OpenTmpfile(dir)
		case Unlinked:
			if opt.Huge {
				err = errors.New("huge pages need memfd")
				break
			}
			fd, err = sys.OpenExclUnlinked(filepath.Join(dir, fmt.Sprintf("goshmem-%d-%d-%s", sys.Getuid(), sys.Getpid(), name)))
		default:
			err = fmt.Errorf("unknown kind %d", k)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s := &Segment{f: os.NewFile(uintptr(fd), name), size: size, kind: k, huge: opt.Huge}
		if err := s.setSize(dir); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("shm.Create %s: no shared-memory kind works here: %w", name, errors.Join(errs...))
}

func (s *Segment) setSize(dir string) error {
	fd := int(s.f.Fd())
	if err := sys.Ftruncate(fd, s.size); err != nil {
		return fmt.Errorf("shm: sizing segment %s to %d bytes: %w", s.f.Name(), s.size, err)
	}
	switch {
	case s.huge:
		// Reserve the huge pages now: a shortfall is an error here, not a
		// SIGBUS on first touch.
		if err := sys.Fallocate(fd, s.size); err != nil {
			return fmt.Errorf("shm: cannot back %d bytes with huge pages (%v); "+
				"add huge pages (sysctl vm.nr_hugepages=N, see /proc/meminfo HugePages_Free) "+
				"or unset SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES", s.size, err)
		}
	case s.kind != Memfd:
		// A tmpfs with a size limit raises SIGBUS when a page cannot be
		// allocated; reserve the blocks now so that it fails here.
		if err := sys.Fallocate(fd, s.size); err != nil {
			free, _, _ := sys.Statfs(dir)
			return fmt.Errorf("shm: cannot reserve %d bytes in %s (%d bytes free): %v; "+
				"lower SHMEM_SYMMETRIC_SIZE or enlarge %s (mount -o remount,size=...)", s.size, dir, free, err, dir)
		}
	}
	return nil
}

// FromFD adopts an inherited descriptor (for example one handed down by
// the launcher). The Segment owns fd afterwards.
func FromFD(fd int, name string) (*Segment, error) {
	size, err := sys.FileSize(fd)
	if sys.IsBadFD(err) {
		return nil, fmt.Errorf("shm: inherited segment %s (fd %d) is not open: a process joins its job once, and the launcher's descriptors were taken by an earlier Init (or Main, Run) in this process, or closed by the program: %w", name, fd, err)
	}
	if err == nil {
		err = notRegular(fd)
	}
	if err != nil {
		return nil, fmt.Errorf("shm: inherited segment %s (fd %d): %w", name, fd, err)
	}
	return &Segment{f: os.NewFile(uintptr(fd), name), size: size, kind: Memfd}, nil
}

// notRegular returns an error unless fd is a regular file, as every
// segment (memfd, tmpfs file) is.
func notRegular(fd int) error {
	reg, err := sys.IsRegular(fd)
	if err == nil && !reg {
		err = errors.New("not a regular file (a segment is a memfd or a tmpfs file; a pipe, socket or directory is no segment)")
	}
	return err
}

// FromFile adopts a segment received as an open file (a descriptor
// passed over a Unix socket); the Segment owns f from then on.
func FromFile(f *os.File) (*Segment, error) {
	if f == nil {
		return nil, fmt.Errorf("shm: FromFile: nil file")
	}
	size, err := sys.FileSize(int(f.Fd()))
	if err == nil {
		err = notRegular(int(f.Fd()))
	}
	if err != nil {
		return nil, fmt.Errorf("shm: inherited segment %s (fd %d): %w", f.Name(), f.Fd(), err)
	}
	return &Segment{f: f, size: size, kind: Memfd}, nil
}

// Fd returns the segment's descriptor (valid until Close).
func (s *Segment) Fd() int { return int(s.f.Fd()) }

// File returns the segment's file, for os/exec's ExtraFiles.
func (s *Segment) File() *os.File { return s.f }

// Size returns the segment's size in bytes.
func (s *Segment) Size() int64 { return s.size }

// Kind returns how the segment was created.
func (s *Segment) Kind() Kind { return s.kind }

// Huge reports whether huge pages back the segment.
func (s *Segment) Huge() bool { return s.huge }

// Close releases the descriptor. Mappings stay valid.
func (s *Segment) Close() error {
	if s == nil || s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// Map maps [off, off+length) of the segment shared and read-write
// (length 0: to the end). It uses mmap-go, whose API covers this case.
func (s *Segment) Map(off, length int64) (*Mapping, error) {
	if s == nil || s.f == nil {
		return nil, errors.New("shm.Map: the segment is closed")
	}
	if length == 0 && off >= 0 && off < s.size {
		length = s.size - off
	}
	if off < 0 || off > s.size || length <= 0 || length > s.size-off {
		return nil, fmt.Errorf("shm.Map: range of %d bytes at offset %d is outside segment of %d bytes", length, off, s.size)
	}
	m, err := mmap.MapRegion(s.f, int(length), mmap.RDWR, 0, off)
	if err != nil {
		return nil, fmt.Errorf("shm.Map %s (%d bytes at offset %d): %w (offsets must be page-aligned; for ENOMEM check ulimit -v and vm.max_map_count)", s.f.Name(), length, off, err)
	}
	return &Mapping{m: m}, nil
}

// MapAligned is Map at an address that is a multiple of align (a power
// of two): the symmetric heaps are mapped this way so that an offset
// aligned to up to align bytes is aligned in every PE's mapping.
func (s *Segment) MapAligned(off, length int64, align uintptr) (*Mapping, error) {
	if s == nil || s.f == nil {
		return nil, errors.New("shm.MapAligned: the segment is closed")
	}
	if off < 0 || off > s.size || length <= 0 || length > s.size-off {
		return nil, fmt.Errorf("shm.MapAligned: range of %d bytes at offset %d is outside segment of %d bytes", length, off, s.size)
	}
	if align == 0 || align&(align-1) != 0 || align > uintptr(math.MaxInt)-uintptr(length) {
		return nil, fmt.Errorf("shm.MapAligned: cannot map %d bytes at an alignment of %d (a power of two whose sum with the length fits an int)", length, align)
	}
	b, err := sys.MmapAligned(s.Fd(), off, int(length), align)
	if err != nil {
		return nil, fmt.Errorf("shm.MapAligned %s: %w", s.f.Name(), err)
	}
	return &Mapping{m: mmap.MMap(b), placed: true}, nil
}

// Mapping is a mapped range of a segment. Close unmaps it; any slice or
// pointer into it is invalid afterwards.
type Mapping struct {
	m      mmap.MMap
	placed bool // made by MapAligned: unmapped with sys.MunmapAligned
}

// Bytes returns the mapped memory.
func (m *Mapping) Bytes() []byte { return m.m }

// Len returns the length of the mapping.
func (m *Mapping) Len() int { return len(m.m) }

// Close unmaps the range.
func (m *Mapping) Close() error {
	if m == nil || m.m == nil {
		return nil
	}
	var err error
	if m.placed {
		err = sys.MunmapAligned(m.m)
	} else {
		err = m.m.Unmap()
	}
	m.m = nil
	return err
}
