package sys

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// MmapAlignment returns the alignment that mmap(2) offsets into the file
// behind fd must have: the huge page size for a hugetlbfs file (such as
// a memfd created with MFD_HUGETLB), the base page size otherwise.
func MmapAlignment(fd int) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return 0, fmt.Errorf("fstatfs(%d): %w", fd, err)
	}
	page := int64(unix.Getpagesize())
	// Statfs_t field types differ between architectures; compare the
	// 32-bit magic and widen the block size.
	if uint32(st.Type) == uint32(unix.HUGETLBFS_MAGIC) && int64(st.Bsize) > page {
		return int64(st.Bsize), nil
	}
	return page, nil
}
