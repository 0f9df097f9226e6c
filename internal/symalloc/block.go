package symalloc

// Block returns the live block that contains off: its start and usable
// size. ok is false when off lies in free space or outside the heap.
// SHMEM_DEBUG uses it to check that an RMA stays inside one allocation.
// It may run concurrently with Alloc, Free and Realloc.
func (a *Allocator) Block(off uintptr) (start, size uintptr, ok bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	i := a.find(off)
	if i < 0 || a.segs[i].free {
		return 0, 0, false
	}
	return a.segs[i].off, a.segs[i].size, true
}
