package xpmem_test

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"sync"
	"testing"

	"github.com/goshmem/goshmem/shm"
	"github.com/goshmem/goshmem/xpmem"
)

// newSegment creates a segment of size bytes, closed at the end of the test.
func newSegment(t *testing.T, size int64) *shm.Segment {
	t.Helper()
	seg, err := shm.Create(t.Name(), size, shm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seg.Close() })
	return seg
}

// export makes seg with permit, removed at the end of the test.
func export(t *testing.T, seg *shm.Segment, permit xpmem.Permit) *xpmem.Export {
	t.Helper()
	e, err := xpmem.Make(seg, permit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Remove() })
	return e
}

func get(t *testing.T, id xpmem.Segid) *xpmem.Access {
	t.Helper()
	a, err := xpmem.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Release() })
	return a
}

func attach(t *testing.T, a *xpmem.Access, off, size int64) *xpmem.Attachment {
	t.Helper()
	m, err := a.Attach(off, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Detach() })
	return m
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want one wrapping %q", what, err, target)
	}
	t.Logf("%s: %v", what, err)
}

func TestMakeGetAttachInProcess(t *testing.T) {
	page := int64(os.Getpagesize())
	seg := newSegment(t, 4*page)
	e := export(t, seg, xpmem.PermitOwner)
	id := e.ID()
	if id.Pid != int32(os.Getpid()) || id.Fd < 0 || id.Permit != xpmem.PermitOwner {
		t.Fatalf("ID() = %+v", id)
	}
	if id.Fd == int32(seg.Fd()) {
		t.Errorf("export shares the segment's descriptor %d; want a duplicate", seg.Fd())
	}
	// The export lives independently of the Segment.
	seg.Close()

	a := get(t, id)
	if a.Size() != 4*page {
		t.Errorf("Size() = %d, want %d", a.Size(), 4*page)
	}
	whole := attach(t, a, 0, 4*page)
	if n := len(whole.Bytes()); int64(n) != 4*page {
		t.Fatalf("len(Bytes()) = %d", n)
	}
	// A second access and an unaligned attachment see the same memory.
	b := get(t, id)
	part := attach(t, b, page+123, 2*page)
	if got := int64(len(part.Bytes())); got != 2*page || int64(cap(part.Bytes())) != 2*page {
		t.Fatalf("unaligned attachment: len %d cap %d, want %d", got, cap(part.Bytes()), 2*page)
	}
	for i := range part.Bytes() {
		part.Bytes()[i] = byte(i*7 + 1)
	}
	for i := range part.Bytes() {
		if got, want := whole.Bytes()[page+123+int64(i)], byte(i*7+1); got != want {
			t.Fatalf("byte %d: got %d through the whole mapping, want %d", page+123+int64(i), got, want)
		}
	}
	copy(whole.Bytes()[page+123:], "written the other way")
	if !bytes.HasPrefix(part.Bytes(), []byte("written the other way")) {
		t.Fatalf("write through the whole mapping not seen in the partial one")
	}
}

// TestRemoveZeroExport: the zero Export owns no descriptor, so its
// Remove is an error and closes nothing (it closed descriptor 0).
func TestRemoveZeroExport(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var e xpmem.Export
	wantErr(t, "Remove of the zero Export", e.Remove(), xpmem.ErrRemoved)
	for _, f := range []*os.File{os.Stdin, r, w} {
		if _, err := f.Stat(); err != nil {
			t.Errorf("%s: %v after Remove of the zero Export", f.Name(), err)
		}
	}
}

func TestRemoveInProcess(t *testing.T) {
	seg := newSegment(t, 8192)
	e, err := xpmem.Make(seg, xpmem.PermitAny)
	if err != nil {
		t.Fatal(err)
	}
	id := e.ID()
	a := get(t, id)
	m := attach(t, a, 0, 8192)
	copy(m.Bytes(), "still here")

	if err := e.Remove(); err != nil {
		t.Fatal(err)
	}
	_, err = xpmem.Get(id)
	wantErr(t, "Get after Remove", err, xpmem.ErrRemoved)
	wantErr(t, "second Remove", e.Remove(), xpmem.ErrRemoved)
	if e.ID() != id {
		t.Errorf("ID changed after Remove: %+v, was %+v", e.ID(), id)
	}
	// Existing accesses and attachments are not revoked.
	if !bytes.HasPrefix(m.Bytes(), []byte("still here")) {
		t.Error("attachment lost its contents after Remove")
	}
	m2 := attach(t, a, 0, 10)
	if string(m2.Bytes()) != "still here" {
		t.Errorf("new attachment through an old access reads %q", m2.Bytes())
	}
}

// TestRemovedFdReused checks that a descriptor number reused for another
// file after Remove reads as removed, never as the other file.
func TestRemovedFdReused(t *testing.T) {
	seg := newSegment(t, 4096)
	other := newSegment(t, 4096)
	e := export(t, seg, xpmem.PermitOwner)
	id := e.ID()

	// Deterministically: an id whose descriptor number is open on another file.
	forged := id
	forged.Fd = int32(other.Fd())
	_, err := xpmem.Get(forged)
	wantErr(t, "Get with a descriptor of another file", err, xpmem.ErrRemoved)

	// Naturally: remove, then create files until the number comes back
	// (the lowest free descriptor is normally reused at once).
	if err := e.Remove(); err != nil {
		t.Fatal(err)
	}
	reused := false
	for range 4 {
		s := newSegment(t, 4096)
		if s.Fd() == int(id.Fd) {
			reused = true
			break
		}
	}
	if !reused {
		t.Logf("descriptor %d was not reused; checked the closed case only", id.Fd)
	}
	_, err = xpmem.Get(id)
	wantErr(t, "Get after Remove and reuse", err, xpmem.ErrRemoved)
}

func TestMakeErrors(t *testing.T) {
	seg := newSegment(t, 4096)
	if _, err := xpmem.Make(seg, xpmem.Permit(9)); err == nil {
		t.Error("Make with an unknown permit succeeded")
	}
	if _, err := xpmem.Make(nil, xpmem.PermitOwner); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Make(nil): %v, want fs.ErrClosed", err)
	}
	seg.Close()
	if _, err := xpmem.Make(seg, xpmem.PermitOwner); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Make(closed segment): %v, want fs.ErrClosed", err)
	}
	if _, err := xpmem.Local(seg); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Local(closed segment): %v, want fs.ErrClosed", err)
	}
}

func TestGetBadSegid(t *testing.T) {
	seg := newSegment(t, 4096)
	good := export(t, seg, xpmem.PermitOwner).ID()
	for _, tc := range []struct {
		name string
		edit func(*xpmem.Segid)
	}{
		{"zero pid", func(id *xpmem.Segid) { id.Pid = 0 }},
		{"negative pid", func(id *xpmem.Segid) { id.Pid = -5 }},
		{"negative fd", func(id *xpmem.Segid) { id.Fd = -1 }},
		{"bad permit", func(id *xpmem.Segid) { id.Permit = 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := good
			tc.edit(&id)
			_, err := xpmem.Get(id)
			wantErr(t, "Get", err, xpmem.ErrBadSegid)
		})
	}
	t.Run("closed fd", func(t *testing.T) {
		id := good
		id.Fd = math.MaxInt32
		_, err := xpmem.Get(id)
		wantErr(t, "Get", err, xpmem.ErrRemoved)
	})
}

// TestAttachAlignedNotPowerOfTwo: an alignment that is not a power of
// two is an error (0 was taken as 1).
func TestAttachAlignedNotPowerOfTwo(t *testing.T) {
	seg := newSegment(t, int64(os.Getpagesize()))
	a, err := xpmem.Local(seg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	for _, align := range []uintptr{0, 3, 12288} {
		if m, err := a.AttachAligned(0, 1, align); err == nil {
			m.Detach()
			t.Errorf("AttachAligned at alignment %d succeeded", align)
		}
	}
	m, err := a.AttachAligned(0, 1, 1)
	if err != nil {
		t.Fatalf("AttachAligned at alignment 1: %v", err)
	}
	m.Detach()
}

func TestAttachBounds(t *testing.T) {
	page := int64(os.Getpagesize())
	size := 3*page + 100 // not a whole number of pages
	seg := newSegment(t, size)
	a, err := xpmem.Local(seg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	for _, tc := range []struct {
		name      string
		off, size int64
		ok        bool
	}{
		{"whole", 0, size, true},
		{"first byte", 0, 1, true},
		{"last byte", size - 1, 1, true},
		{"tail of the last page", 3 * page, 100, true},
		{"unaligned across pages", page - 1, 2, true},
		{"unaligned to the end", 17, size - 17, true},
		{"zero size", 0, 0, false},
		{"negative size", 0, -1, false},
		{"negative offset", -1, 10, false},
		{"offset at end", size, 1, false},
		{"offset past end", size + page, 1, false},
		{"one byte too long", 0, size + 1, false},
		{"end past the segment", size - 10, 11, false},
		{"overflowing end", 1, math.MaxInt64, false},
		{"huge offset", math.MaxInt64, 1, false},
		{"most negative offset", math.MinInt64, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := a.Attach(tc.off, tc.size)
			if !tc.ok {
				if err == nil {
					m.Detach()
					t.Fatalf("Attach(%d, %d) succeeded", tc.off, tc.size)
				}
				wantErr(t, "Attach", err, xpmem.ErrOutOfRange)
				return
			}
			if err != nil {
				t.Fatalf("Attach(%d, %d): %v", tc.off, tc.size, err)
			}
			defer m.Detach()
			b := m.Bytes()
			if int64(len(b)) != tc.size || int64(cap(b)) != tc.size {
				t.Fatalf("Attach(%d, %d): len %d cap %d", tc.off, tc.size, len(b), cap(b))
			}
			b[0], b[len(b)-1] = 0xA5, 0x5A // must not fault
		})
	}
}

func TestReleaseDetachTwice(t *testing.T) {
	seg := newSegment(t, 4096)
	for _, tc := range []struct {
		name string
		run  func(a *xpmem.Access, m *xpmem.Attachment) error
	}{
		{"release twice", func(a *xpmem.Access, m *xpmem.Attachment) error {
			if err := a.Release(); err != nil {
				return err
			}
			return a.Release()
		}},
		{"detach twice", func(a *xpmem.Access, m *xpmem.Attachment) error {
			if err := m.Detach(); err != nil {
				return err
			}
			return m.Detach()
		}},
		{"attach after release", func(a *xpmem.Access, m *xpmem.Attachment) error {
			if err := a.Release(); err != nil {
				return err
			}
			_, err := a.Attach(0, 1)
			return err
		}},
		{"detach after release, then release again", func(a *xpmem.Access, m *xpmem.Attachment) error {
			if err := a.Release(); err != nil {
				return err
			}
			if err := m.Detach(); err != nil {
				return err
			}
			return a.Release()
		}},
		{"nil access", func(*xpmem.Access, *xpmem.Attachment) error { return (*xpmem.Access)(nil).Release() }},
		{"nil attachment", func(*xpmem.Access, *xpmem.Attachment) error { return (*xpmem.Attachment)(nil).Detach() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := xpmem.Local(seg)
			if err != nil {
				t.Fatal(err)
			}
			m, err := a.Attach(0, 4096)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Release()
			defer m.Detach()
			wantErr(t, tc.name, tc.run(a, m), fs.ErrClosed)
		})
	}
}

func TestReleaseKeepsAttachments(t *testing.T) {
	seg := newSegment(t, 4096)
	e := export(t, seg, xpmem.PermitOwner)
	a, err := xpmem.Get(e.ID())
	if err != nil {
		t.Fatal(err)
	}
	m := attach(t, a, 0, 4096)
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	copy(m.Bytes(), "after release")
	check := attach(t, get(t, e.ID()), 0, 13)
	if string(check.Bytes()) != "after release" {
		t.Fatalf("read %q through a new access", check.Bytes())
	}
	if err := m.Detach(); err != nil {
		t.Fatal(err)
	}
	if m.Bytes() != nil {
		t.Error("Bytes() after Detach is not nil")
	}
}

func TestLocal(t *testing.T) {
	seg := newSegment(t, 8192)
	a, err := xpmem.Local(seg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	// The access has its own descriptor: closing the segment does not matter.
	seg.Close()
	m := attach(t, a, 4096, 4096)
	copy(m.Bytes(), "local")
	m2 := attach(t, a, 4096, 5)
	if string(m2.Bytes()) != "local" {
		t.Fatalf("read %q", m2.Bytes())
	}
}

// TestConcurrent hammers one access from several goroutines (for -race).
func TestConcurrent(t *testing.T) {
	seg := newSegment(t, 1<<16)
	e := export(t, seg, xpmem.PermitOwner)
	a := get(t, e.ID())
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				m, err := a.Attach(int64(g*4096+i), 100)
				if err != nil {
					t.Error(err)
					return
				}
				m.Bytes()[0] = byte(i)
				if err := m.Detach(); err != nil {
					t.Error(err)
				}
				if b, err := xpmem.Get(e.ID()); err != nil {
					t.Error(err)
				} else if err := b.Release(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
