package numa

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/goshmem/goshmem/internal/sys"
)

func TestAllowed(t *testing.T) {
	cpus, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) == 0 || !slices.IsSorted(cpus) {
		t.Fatalf("Allowed() = %v; want a non-empty ascending list", cpus)
	}
	topo, err := Discover("")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cpus {
		if _, ok := slices.BinarySearch(topo.Online, c); !ok {
			t.Errorf("allowed CPU %d is not online (%s)", c, FormatCPUList(topo.Online))
		}
	}
}

// onLockedThread runs f on a goroutine that locks its OS thread and
// never unlocks it, so that the thread, with whatever binding f gave
// it, ends with the goroutine.
func onLockedThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		f()
	}()
	<-done
}

func TestBind(t *testing.T) {
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]int{{allowed[len(allowed)-1]}, {allowed[0]}, allowed} {
		onLockedThread(func() {
			if err := Bind(want); err != nil {
				t.Errorf("Bind(%v): %v", want, err)
				return
			}
			got, err := sys.Affinity(0)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("after Bind(%v) the thread may run on %v, %v", want, got, err)
			}
		})
	}
}

func TestBindErrors(t *testing.T) {
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cpus []int
		want string
	}{
		{nil, "empty set of CPUs"},
		{[]int{}, "empty set of CPUs"},
		{[]int{-1}, "cannot bind to CPU -1"},
		{[]int{0, sys.AffinityCPUs}, "CPU numbers go from 0 to"},
	}
	if last := sys.AffinityCPUs - 1; !slices.Contains(allowed, last) {
		tests = append(tests, struct {
			cpus []int
			want string
		}{[]int{last}, "name CPUs from those this process may use (" + FormatCPUList(allowed)})
	}
	for _, tt := range tests {
		onLockedThread(func() {
			err := Bind(tt.cpus)
			if err == nil {
				t.Errorf("Bind(%v) = nil; want an error", tt.cpus)
			} else if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Bind(%v) error %q does not contain %q", tt.cpus, err, tt.want)
			}
		})
	}
}

func TestNumCPUs(t *testing.T) {
	online, possible, err := NumCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if online < 1 || possible < online {
		t.Errorf("NumCPUs() = %d online, %d possible", online, possible)
	}
}

func TestCacheLineSize(t *testing.T) {
	n := CacheLineSize()
	if !validLine(n) {
		t.Errorf("CacheLineSize() = %d; want a power of two in [16, 1024]", n)
	}
	if runtime.GOARCH == "amd64" && n != 64 {
		t.Logf("cache line %d bytes on amd64", n)
	}
}

func TestValidLine(t *testing.T) {
	for n, want := range map[int]bool{0: false, 8: false, 16: true, 48: false, 64: true, 128: true, 256: true, 1024: true, 2048: false, -64: false} {
		if validLine(n) != want {
			t.Errorf("validLine(%d) = %v", n, !want)
		}
	}
}

func TestSysfsCacheLine(t *testing.T) {
	root := writeTree(t, map[string]string{"a": "128\n", "b": "many\n"})
	for path, want := range map[string]int{"a": 128, "b": 0, "missing": 0} {
		if got := sysfsCacheLine(root + "/" + path); got != want {
			t.Errorf("sysfsCacheLine(%s) = %d; want %d", path, got, want)
		}
	}
}
