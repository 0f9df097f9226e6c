package sys

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Reserve reserves length bytes of address space at an address that is
// a multiple of align (a power of two), inaccessible and backed by
// nothing (PROT_NONE, MAP_NORESERVE), for MapFixed to map files into.
// Unreserve releases it with whatever is mapped in it.
func Reserve(length int, align uintptr) ([]byte, error) {
	page := uintptr(unix.Getpagesize())
	if length <= 0 || align&(align-1) != 0 || uintptr(length)%page != 0 {
		return nil, fmt.Errorf("mmap: bad reservation length %d or alignment %d", length, align)
	}
	align = max(align, page)
	total := uintptr(length) + align - page
	resv, err := unix.MmapPtr(-1, 0, nil, total, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("mmap: reserving %d bytes of address space: %w (check ulimit -v)", total, err)
	}
	head := (align - uintptr(resv)&(align-1)) & (align - 1)
	if head > 0 {
		unix.MunmapPtr(resv, head)
	}
	if tail := total - head - uintptr(length); tail > 0 {
		unix.MunmapPtr(unsafe.Add(resv, head+uintptr(length)), tail)
	}
	return unsafe.Slice((*byte)(unsafe.Add(resv, head)), length), nil
}

// MapFixed maps len(at) bytes of fd from offset, shared and read-write,
// over at, which must lie in a reservation made by Reserve.
func MapFixed(fd int, offset int64, at []byte) error {
	p := unsafe.Pointer(unsafe.SliceData(at))
	_, err := unix.MmapPtr(fd, offset, p, uintptr(len(at)), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED)
	if err != nil {
		return fmt.Errorf("mmap(%d bytes at offset %d): %w (for ENOMEM check vm.max_map_count)", len(at), offset, err)
	}
	return nil
}

// Unreserve unmaps a reservation made by Reserve and everything mapped
// in it.
func Unreserve(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
}
