package goshmem_test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/goshmem/goshmem"
	"github.com/goshmem/goshmem/node"
)

// TestInfo: the version is OpenSHMEM 1.5 and agrees with SpecVersion;
// the vendor string fits SHMEM_MAX_NAME_LEN with a C terminator, names
// goshmem and its version, and is the same inside and outside a job.
func TestInfo(t *testing.T) {
	major, minor := goshmem.InfoGetVersion()
	if major != 1 || minor != 5 {
		t.Errorf("InfoGetVersion() = %d, %d; want 1, 5", major, minor)
	}
	if v := fmt.Sprintf("%d.%d", major, minor); v != goshmem.SpecVersion {
		t.Errorf("InfoGetVersion() = %s, but SpecVersion = %s", v, goshmem.SpecVersion)
	}
	name := goshmem.InfoGetName()
	if name == "" || len(name) >= goshmem.MaxNameLen || goshmem.MaxNameLen != 256 {
		t.Errorf("InfoGetName() = %q (%d bytes); want 1 to %d bytes", name, len(name), goshmem.MaxNameLen-1)
	}
	if name != goshmem.VendorString || !strings.Contains(name, "goshmem") || !strings.Contains(name, goshmem.Version) {
		t.Errorf("InfoGetName() = %q; want VendorString %q, naming goshmem %s", name, goshmem.VendorString, goshmem.Version)
	}
	run(t, 2, testHeap, func(p *goshmem.PE) {
		if got := goshmem.InfoGetName(); got != name {
			t.Errorf("PE %d: InfoGetName() = %q inside a job, %q outside", p.MyPE(), got, name)
		}
	})
}

// TestBannerInProcess: SHMEM_VERSION and SHMEM_INFO print at the start
// of an in-process job as they do under oshrun (once, from PE 0), and a
// job without them prints nothing.
func TestBannerInProcess(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		cfg      *node.Config // RunLocalConfig with it, else RunLocal
		want     []string
		wantNone bool
	}{
		{name: "env version", env: map[string]string{"SHMEM_VERSION": "1"}, want: []string{"goshmem " + goshmem.Version, "OpenSHMEM 1.5"}},
		{name: "env info", env: map[string]string{"SHMEM_INFO": "1"}, want: []string{"goshmem " + goshmem.Version, "SHMEM_SYMMETRIC_SIZE   ", "on-node transport:"}},
		{name: "config", cfg: &node.Config{HeapSize: testHeap, Info: true, Version: true}, want: []string{"goshmem " + goshmem.Version, "SHMEM_SYMMETRIC_SIZE   "}},
		{name: "quiet", cfg: &node.Config{HeapSize: testHeap}, wantNone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			out := captureStderr(t, func() {
				var err error
				fn := func(p *goshmem.PE) { p.BarrierAll() }
				if tc.cfg != nil {
					err = goshmem.RunLocalConfig(*tc.cfg, 2, fn)
				} else {
					err = goshmem.RunLocal(2, fn)
				}
				if err != nil {
					t.Error(err)
				}
			})
			if tc.wantNone && out != "" {
				t.Errorf("printed %q, want nothing", out)
			}
			for _, w := range tc.want {
				if strings.Count(out, w) != 1 {
					t.Errorf("output has %q %d times, want once:\n%s", w, strings.Count(out, w), out)
				}
			}
		})
	}
}

// captureStderr returns what f writes to os.Stderr.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	defer func() { os.Stderr = old }()
	f()
	os.Stderr = old
	w.Close()
	return <-got
}

// TestPControl: every level, with or without arguments, is accepted
// and changes nothing, inside and outside a job.
func TestPControl(t *testing.T) {
	for _, level := range []int{-1, 0, 1, 2, 3} {
		goshmem.PControl(level)
		goshmem.PControl(level, "buffer", 42)
	}
	run(t, 2, testHeap, func(p *goshmem.PE) {
		x := mustCalloc[int64](p, 1)
		goshmem.PControl(0)
		goshmem.AtomicAdd(p.Ctx(), &x[0], 1, 0)
		goshmem.PControl(2, p.MyPE())
		p.BarrierAll()
		if p.MyPE() == 0 && x[0] != 2 {
			t.Errorf("x = %d after PControl and two AtomicAdds, want 2", x[0])
		}
	})
	if n := testing.AllocsPerRun(100, func() { goshmem.PControl(1) }); n != 0 {
		t.Errorf("PControl(1) allocates %v times", n)
	}
}

func ExampleInfoGetVersion() {
	major, minor := goshmem.InfoGetVersion()
	fmt.Printf("OpenSHMEM %d.%d\n", major, minor)
	fmt.Println(len(goshmem.InfoGetName()) < goshmem.MaxNameLen)
	goshmem.PControl(1) // accepted; goshmem has no profiling layer
	// Output:
	// OpenSHMEM 1.5
	// true
}
