package job_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/goshmem/goshmem/internal/job"
	"github.com/goshmem/goshmem/shm"
)

const line = shm.CacheLine

func TestStructSizes(t *testing.T) {
	l1 := job.LayoutFor(1)
	if l1.Rounds != 0 {
		t.Fatalf("LayoutFor(1).Rounds = %d, want 0", l1.Rounds)
	}
	headerBytes := uintptr(l1.Size) - l1.SlotSize
	cases := []struct {
		name       string
		got, want  uintptr
		layoutSays uintptr
	}{
		{"Header", unsafe.Sizeof(job.Header{}), 4 * line, headerBytes},
		{"Slot", unsafe.Sizeof(job.Slot{}), 7 * line, l1.SlotSize},
		{"Doorbell", unsafe.Sizeof(job.Doorbell{}), line, line},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("unsafe.Sizeof(job.%s{}) = %d, want %d", c.name, c.got, c.want)
		}
		if c.got != c.layoutSays {
			t.Errorf("unsafe.Sizeof(job.%s{}) = %d, but the layout reserves %d bytes for it", c.name, c.got, c.layoutSays)
		}
		if c.got%line != 0 {
			t.Errorf("job.%s is %d bytes, not whole cache lines", c.name, c.got)
		}
	}
	// Abort must fit the line it is padded to.
	if s := unsafe.Sizeof(job.Abort{}); s != 24 {
		t.Errorf("unsafe.Sizeof(job.Abort{}) = %d, want 24", s)
	}
}

func TestFieldLines(t *testing.T) {
	var h job.Header
	var s job.Slot
	cases := []struct {
		name string
		off  uintptr
		want uintptr
	}{
		{"Header.Magic", unsafe.Offsetof(h.Magic), 0},
		{"Header.AMOLocked", unsafe.Offsetof(h.AMOLocked), 32},
		{"Header.CPUs", unsafe.Offsetof(h.CPUs), 36},
		{"Header.Abort", unsafe.Offsetof(h.Abort), 1 * line},
		{"Header.Finalized", unsafe.Offsetof(h.Finalized), 2 * line},
		{"Header.Finalizing", unsafe.Offsetof(h.Finalizing), 2*line + 4}, // (node reads both as one 8-byte word)
		{"Slot.Pid", unsafe.Offsetof(s.Pid), 0},
		{"Slot.HeapAddr", unsafe.Offsetof(s.HeapAddr), 8},
		{"Slot.Mapped", unsafe.Offsetof(s.Mapped), 16},
		{"Slot.Node", unsafe.Offsetof(s.Node), 20},
		{"Slot.Door", unsafe.Offsetof(s.Door), 1 * line},
		{"Slot.AllocSeq", unsafe.Offsetof(s.AllocSeq), 2 * line},
		{"Slot.AllocHash", unsafe.Offsetof(s.AllocHash), 2*line + 16},
		{"Slot.Epoch", unsafe.Offsetof(s.Epoch), 3 * line},
		{"Slot.AMOLock", unsafe.Offsetof(s.AMOLock), 4 * line},
		{"Header.Tasks", unsafe.Offsetof(h.Tasks), 3 * line},
		{"Slot.Task", unsafe.Offsetof(s.Task), 5 * line},
		{"Slot.TaskDone", unsafe.Offsetof(s.TaskDone), 6 * line},
	}
	for _, c := range cases {
		if c.off != c.want {
			t.Errorf("offset of %s = %d, want %d", c.name, c.off, c.want)
		}
	}
}

func TestLayoutFor(t *testing.T) {
	slotBase := job.LayoutFor(1).SlotSize             // slot without barrier flags
	header := job.LayoutFor(1).Size - int64(slotBase) // header bytes
	cases := []struct {
		npes, rounds int
	}{
		{1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {7, 3}, {8, 3}, {9, 4},
		{16, 4}, {17, 5}, {1000, 10}, {1024, 10}, {1025, 11},
	}
	for _, c := range cases {
		l := job.LayoutFor(c.npes)
		// ceil(log2 n) computed independently.
		want := 0
		for 1<<want < c.npes {
			want++
		}
		if want != c.rounds {
			t.Fatalf("test table wrong for %d", c.npes)
		}
		slot := slotBase + uintptr(c.rounds)*line
		size := header + int64(c.npes)*int64(slot)
		if l.NPEs != c.npes || l.Rounds != c.rounds || l.SlotSize != slot || l.Size != size {
			t.Errorf("LayoutFor(%d) = %+v, want {NPEs:%d Rounds:%d SlotSize:%d Size:%d}", c.npes, l, c.npes, c.rounds, slot, size)
		}
		if l.Size%line != 0 {
			t.Errorf("LayoutFor(%d).Size = %d, not whole lines", c.npes, l.Size)
		}
	}
	// Spot-check absolute numbers.
	if got := job.LayoutFor(3); got.SlotSize != 9*line || got.Size != 4*line+3*9*line {
		t.Errorf("LayoutFor(3) = %+v, want SlotSize 576 and Size 1984", got)
	}
	if got := job.LayoutFor(1000); got.Size != 4*line+1000*17*line {
		t.Errorf("LayoutFor(1000).Size = %d, want %d", got.Size, 4*line+1000*17*line)
	}
}

// mapControl returns a fresh, page-aligned, zeroed mapping of size bytes.
func mapControl(t testing.TB, size int64) []byte {
	t.Helper()
	s, err := shm.Create("jobtest-ctl", size, shm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := s.Map(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m.Bytes()
}

func TestControlFlagsOwnLines(t *testing.T) {
	for _, npes := range []int{1, 2, 3, 4, 5, 8, 33} {
		t.Run(strconv.Itoa(npes), func(t *testing.T) {
			l := job.LayoutFor(npes)
			b := mapControl(t, l.Size)
			c, err := job.OpenControl(b, npes, 1<<20, 7, true)
			if err != nil {
				t.Fatal(err)
			}
			base := uintptr(unsafe.Pointer(&b[0]))
			owner := make(map[uintptr]string) // line index -> what is there
			claim := func(off, size uintptr, what string) {
				if off%line != 0 {
					t.Errorf("%s at offset %d is not line-aligned", what, off)
				}
				if off+size > uintptr(l.Size) {
					t.Errorf("%s at [%d, %d) is outside the %d-byte control block", what, off, off+size, l.Size)
				}
				for ln := off / line; ln < (off+size+line-1)/line; ln++ {
					if prev, ok := owner[ln]; ok {
						t.Errorf("%s shares line %d with %s", what, ln, prev)
					}
					owner[ln] = what
				}
			}
			if uintptr(unsafe.Pointer(c.Header)) != base {
				t.Fatal("Header is not at offset 0")
			}
			claim(0, unsafe.Sizeof(job.Header{}), "header")
			for pe := 0; pe < npes; pe++ {
				slotOff := uintptr(unsafe.Pointer(c.Slot(pe))) - base
				claim(slotOff, unsafe.Sizeof(job.Slot{}), fmt.Sprintf("slot %d", pe))
				for r := 0; r < l.Rounds; r++ {
					off := uintptr(unsafe.Pointer(c.Flag(pe, r))) - base
					if off < slotOff || off >= slotOff+l.SlotSize {
						t.Errorf("Flag(%d, %d) at %d is outside slot %d [%d, %d)", pe, r, off, pe, slotOff, slotOff+l.SlotSize)
					}
					claim(off, unsafe.Sizeof(shm.Uint32{}), fmt.Sprintf("Flag(%d, %d)", pe, r))
				}
			}
			if want := int(l.Size / line); len(owner) != want {
				t.Errorf("%d of %d lines used", len(owner), want)
			}
			// The flags are writable words of the mapping.
			if l.Rounds > 0 {
				f := c.Flag(npes-1, l.Rounds-1)
				f.Store(0xabcdef01)
				if got := *(*uint32)(unsafe.Pointer(&b[l.Size-line])); got != 0xabcdef01 {
					t.Errorf("last flag is not the last line of the block (read %#x)", got)
				}
			}
		})
	}
}

func TestOpenControl(t *testing.T) {
	const npes = 3
	l := job.LayoutFor(npes)
	b := mapControl(t, l.Size)
	c, err := job.OpenControl(b, npes, 5<<20, 0xfeed, true)
	if err != nil {
		t.Fatal(err)
	}
	h := c.Header
	if h.NPEs != npes || h.HeapSize != 5<<20 || h.JobID != 0xfeed || h.Version != 5 {
		t.Fatalf("init wrote NPEs %d HeapSize %d JobID %#x Version %d", h.NPEs, h.HeapSize, h.JobID, h.Version)
	}
	if c.Layout != l {
		t.Fatalf("Control.Layout = %+v, want %+v", c.Layout, l)
	}
	c.Slot(2).Pid.Store(1234)

	// Reopening the same bytes sees the same block.
	c2, err := job.OpenControl(b, npes, 5<<20, 0xfeed, false)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if c2.Slot(2).Pid.Load() != 1234 || c2.Header.JobID != 0xfeed {
		t.Fatal("reopened control block does not see the first one's data")
	}
	// A larger mapping than needed is fine.
	big := mapControl(t, l.Size+4096)
	if _, err := job.OpenControl(big, npes, 1, 1, true); err != nil {
		t.Fatalf("OpenControl on a larger mapping: %v", err)
	}

	cases := []struct {
		name  string
		b     []byte
		npes  int
		setup func(h *job.Header)
		want  []string
	}{
		{"zeroed segment", mapControl(t, l.Size), npes, nil, []string{"not a goshmem v5 job", "magic 0x0"}},
		{"bad magic", b, npes, func(h *job.Header) { h.Magic = 0xdeadbeef }, []string{"not a goshmem v5 job", "magic 0xdeadbeef", "different goshmem version"}},
		{"bad version", b, npes, func(h *job.Header) { h.Version = 2 }, []string{"not a goshmem v5 job"}},
		{"fewer PEs", b, 2, nil, []string{"control segment is for 3 PEs, environment says 2"}},
		{"one PE", b, 1, nil, []string{"control segment is for 3 PEs, environment says 1"}},
		{"more PEs than fit", b, 4, nil, []string{fmt.Sprintf("control segment of %d bytes is too small for 4 PEs (%d needed)", l.Size, job.LayoutFor(4).Size)}},
		{"short by one byte", b[:l.Size-1], npes, nil, []string{fmt.Sprintf("control segment of %d bytes is too small for 3 PEs (%d needed)", l.Size-1, l.Size)}},
		{"empty", nil, npes, nil, []string{"control segment of 0 bytes is too small"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				// Work on a copy so that the cases stay independent.
				cp := mapControl(t, l.Size)
				copy(cp, tc.b)
				tc.b = cp
				tc.setup((*job.Header)(unsafe.Pointer(&cp[0])))
			}
			c, err := job.OpenControl(tc.b, tc.npes, 5<<20, 0xfeed, false)
			if err == nil {
				t.Fatalf("OpenControl succeeded: %+v", c.Layout)
			}
			if c != nil {
				t.Errorf("OpenControl returned a Control with error %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// A short segment is rejected before anything is written.
	short := mapControl(t, l.Size)[:l.Size-line]
	if _, err := job.OpenControl(short, npes, 1, 1, true); err == nil {
		t.Error("OpenControl(init) accepted a short segment")
	}
}

func TestAbortFirstWins(t *testing.T) {
	const n = 64
	for iter := 0; iter < 20; iter++ {
		var a job.Abort
		if _, _, _, _, ok := a.Get(); ok {
			t.Fatal("Get on a fresh Abort reports a failure")
		}
		var start, done sync.WaitGroup
		start.Add(1)
		wins := make([]bool, n)
		for i := range n {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				wins[i] = a.Set(uint32(1+i%7), i, 1000+i, 100+i)
			}()
		}
		start.Done()
		done.Wait()
		winner := -1
		for i, w := range wins {
			if w {
				if winner >= 0 {
					t.Fatalf("both Set %d and Set %d report that they recorded the failure", winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatal("no Set recorded the failure")
		}
		kind, pe, pid, code, ok := a.Get()
		if !ok || kind != uint32(1+winner%7) || pe != winner || pid != 1000+winner || code != 100+winner {
			t.Fatalf("Get = %d, %d, %d, %d, %v; want the winner's %d, %d, %d, %d, true",
				kind, pe, pid, code, ok, 1+winner%7, winner, 1000+winner, 100+winner)
		}
		if a.Set(job.AbortTimeout, 1, 2, 3) {
			t.Fatal("a late Set overwrote the record")
		}
		if k, _, _, _, _ := a.Get(); k != uint32(1+winner%7) {
			t.Fatal("a late Set changed the kind")
		}
	}
}

func TestAbortGetWhileWriting(t *testing.T) {
	var a job.Abort
	a.State.Store(1) // a writer claimed the record but has not published it
	a.Kind.Store(job.AbortSignal)
	if _, _, _, _, ok := a.Get(); ok {
		t.Fatal("Get reports a record that is still being written")
	}
	if a.Set(job.AbortExit, 0, 0, 1) {
		t.Fatal("Set won against a writer that claimed the record first")
	}
}

func TestDescribe(t *testing.T) {
	cases := []struct {
		kind          uint32
		pe, pid, code int
		want          string
	}{
		{job.AbortExit, 2, 4242, 0, "PE 2 (pid 4242) exited without calling Finalize"},
		{job.AbortExit, 2, 4242, 3, "PE 2 (pid 4242) exited with code 3"},
		{job.AbortExit, 0, 0, 1, "PE 0 exited with code 1"},
		{job.AbortExit, 1, -1, 255, "PE 1 exited with code 255"},
		{job.AbortSignal, 3, 99, 9, "PE 3 (pid 99) was killed by SIGKILL"},
		{job.AbortSignal, 3, 99, 11, "PE 3 (pid 99) was killed by SIGSEGV"},
		{job.AbortSignal, 3, 0, 200, "PE 3 was killed by signal 200"},
		{job.AbortGlobalExit, 1, 7, 42, "PE 1 (pid 7) called GlobalExit(42)"},
		{job.AbortGlobalExit, 0, 0, 0, "PE 0 called GlobalExit(0)"},
		{job.AbortTimeout, -1, 0, 0, "the job's time limit expired"},
		{job.AbortInterrupted, -1, 0, 2, "the launcher was stopped by SIGINT"},
		{job.AbortInterrupted, -1, 0, 15, "the launcher was stopped by SIGTERM"},
		{job.AbortPanic, 4, 0, 0, "PE 4 panicked"},
		{job.AbortPanic, 4, 55, 0, "PE 4 (pid 55) panicked"},
		{job.AbortStart, 1, 56, 0, "PE 1 (pid 56) failed to start (its Init returned the error, which its process reports)"},
		{job.AbortLost, 5, 66, 0, "PE 5 (pid 66) died (its process is gone)"},
		{job.AbortFinalized, 1, 77, 1, "PE 1 (pid 77) called Finalize after 1 barrier of the whole job (BarrierAll, SyncAll, collective allocations and Finalize count), while another PE waits in a later one, which PE 1 will never join: the PEs made different collective calls (did PE 1 return early from the function Main or Run runs?)"},
		{job.AbortFinalized, 0, 0, 5, "PE 0 called Finalize after 5 barriers of the whole job (BarrierAll, SyncAll, collective allocations and Finalize count), while another PE waits in a later one, which PE 0 will never join: the PEs made different collective calls (did PE 0 return early from the function Main or Run runs?)"},
		{job.AbortTeamFinal, 2, 9, 1, "PE 2 (pid 9) called Finalize after 1 collective call on a team it belongs to (Team.Sync, Team.Barrier, the collectives, splits and Team.Destroy count), while another member of that team had made more and waits in one that PE 2 will never make: the PEs made different collective calls (did PE 2 return early from the function Main or Run runs?)"},
		{job.AbortTeamFinal, 0, 0, 0, "PE 0 called Finalize after 0 collective calls on a team it belongs to (Team.Sync, Team.Barrier, the collectives, splits and Team.Destroy count), while another member of that team had made more and waits in one that PE 0 will never make: the PEs made different collective calls (did PE 0 return early from the function Main or Run runs?)"},
		{job.AbortNone, 0, 0, 0, "PE 0 failed (kind 0, code 0)"},
		{99, 1, 2, 3, "PE 1 (pid 2) failed (kind 99, code 3)"},
	}
	for _, c := range cases {
		if got := job.Describe(c.kind, c.pe, c.pid, c.code); got != c.want {
			t.Errorf("Describe(%d, %d, %d, %d) = %q, want %q", c.kind, c.pe, c.pid, c.code, got, c.want)
		}
	}
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func goodEnv() map[string]string {
	return map[string]string{
		job.EnvJobID:    "1f",
		job.EnvNPEs:     "4",
		job.EnvPE:       "2",
		job.EnvLocalPEs: "2",
		job.EnvFD:       "3",
		job.EnvLauncher: "777",
	}
}

func TestSpecFromEnv(t *testing.T) {
	spec, ok, err := job.SpecFromEnv(envOf(goodEnv()))
	want := job.Spec{JobID: 0x1f, NPEs: 4, FirstPE: 2, LocalPEs: 2, FD: 3, LauncherPid: 777}
	if err != nil || !ok || spec != want {
		t.Fatalf("SpecFromEnv(good) = %+v, %v, %v; want %+v, true, nil", spec, ok, err, want)
	}

	// Not started by a launcher.
	for _, env := range []map[string]string{nil, {}, {job.EnvNPEs: "4", job.EnvPE: "0"}, {job.EnvJobID: ""}} {
		spec, ok, err := job.SpecFromEnv(envOf(env))
		if ok || err != nil || spec != (job.Spec{}) {
			t.Errorf("SpecFromEnv(%v) = %+v, %v, %v; want zero, false, nil", env, spec, ok, err)
		}
	}

	valid := []struct {
		name, key, val string
		check          func(job.Spec) bool
	}{
		{"max job id", job.EnvJobID, "ffffffffffffffff", func(s job.Spec) bool { return s.JobID == math.MaxUint64 }},
		{"upper-case job id", job.EnvJobID, "ABCDEF", func(s job.Spec) bool { return s.JobID == 0xabcdef }},
		{"job id 0", job.EnvJobID, "0", func(s job.Spec) bool { return s.JobID == 0 }},
		{"first PE 0", job.EnvPE, "0", func(s job.Spec) bool { return s.FirstPE == 0 }},
		{"all PEs in one process", job.EnvPE, "0", func(s job.Spec) bool { return s.FirstPE == 0 && s.LocalPEs == 2 }},
		{"last PE alone", job.EnvLocalPEs, "1", func(s job.Spec) bool { return s.LocalPEs == 1 }},
		{"fd 0", job.EnvFD, "0", func(s job.Spec) bool { return s.FD == 0 }},
		{"no launcher pid", job.EnvLauncher, "", func(s job.Spec) bool { return s.LauncherPid == 0 }},
		{"garbage launcher pid", job.EnvLauncher, "abc", func(s job.Spec) bool { return s.LauncherPid == 0 }},
	}
	for _, c := range valid {
		env := goodEnv()
		env[c.key] = c.val
		spec, ok, err := job.SpecFromEnv(envOf(env))
		if err != nil || !ok || !c.check(spec) {
			t.Errorf("%s: SpecFromEnv(%s=%q) = %+v, %v, %v", c.name, c.key, c.val, spec, ok, err)
		}
	}

	bad := []struct {
		name     string
		set      map[string]string
		badVar   string
		badValue string
	}{
		{"job id not hex", map[string]string{job.EnvJobID: "xyz"}, job.EnvJobID, "xyz"},
		{"job id with 0x", map[string]string{job.EnvJobID: "0x1f"}, job.EnvJobID, "0x1f"},
		{"job id too long", map[string]string{job.EnvJobID: "10000000000000000"}, job.EnvJobID, "10000000000000000"},
		{"job id negative", map[string]string{job.EnvJobID: "-1"}, job.EnvJobID, "-1"},
		{"job id blank", map[string]string{job.EnvJobID: " "}, job.EnvJobID, " "},
		{"npes missing", map[string]string{job.EnvNPEs: ""}, job.EnvNPEs, ""},
		{"npes zero", map[string]string{job.EnvNPEs: "0"}, job.EnvNPEs, "0"},
		{"npes negative", map[string]string{job.EnvNPEs: "-4"}, job.EnvNPEs, "-4"},
		{"npes not a number", map[string]string{job.EnvNPEs: "four"}, job.EnvNPEs, "four"},
		{"npes with space", map[string]string{job.EnvNPEs: " 4"}, job.EnvNPEs, " 4"},
		{"npes overflow", map[string]string{job.EnvNPEs: "99999999999999999999"}, job.EnvNPEs, "99999999999999999999"},
		{"pe missing", map[string]string{job.EnvPE: ""}, job.EnvPE, ""},
		{"pe negative", map[string]string{job.EnvPE: "-1"}, job.EnvPE, "-1"},
		{"pe hex", map[string]string{job.EnvPE: "0x1"}, job.EnvPE, "0x1"},
		{"local pes missing", map[string]string{job.EnvLocalPEs: ""}, job.EnvLocalPEs, ""},
		{"local pes zero", map[string]string{job.EnvLocalPEs: "0"}, job.EnvLocalPEs, "0"},
		{"fd missing", map[string]string{job.EnvFD: ""}, job.EnvFD, ""},
		{"fd negative", map[string]string{job.EnvFD: "-3"}, job.EnvFD, "-3"},
		{"fd float", map[string]string{job.EnvFD: "3.0"}, job.EnvFD, "3.0"},
		{"local PEs past the end", map[string]string{job.EnvPE: "3", job.EnvLocalPEs: "2"}, job.EnvLocalPEs, "2"},
		{"first PE past the end", map[string]string{job.EnvPE: "4", job.EnvLocalPEs: "1"}, job.EnvLocalPEs, "1"},
		{"more local PEs than PEs", map[string]string{job.EnvPE: "0", job.EnvLocalPEs: "5"}, job.EnvLocalPEs, "5"},
		// FirstPE+LocalPEs overflows int and wraps negative: it must not
		// pass the FirstPE+LocalPEs <= NPEs check.
		{"first PE + local PEs overflows", map[string]string{job.EnvNPEs: "1", job.EnvPE: strconv.Itoa(math.MaxInt), job.EnvLocalPEs: "1"}, job.EnvLocalPEs, "1"},
		{"local PEs overflow", map[string]string{job.EnvNPEs: "1", job.EnvPE: "1", job.EnvLocalPEs: strconv.Itoa(math.MaxInt)}, job.EnvLocalPEs, strconv.Itoa(math.MaxInt)},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			env := goodEnv()
			for k, v := range c.set {
				env[k] = v
			}
			spec, ok, err := job.SpecFromEnv(envOf(env))
			if err == nil {
				t.Fatalf("SpecFromEnv accepted %v: %+v", c.set, spec)
			}
			if !ok {
				t.Errorf("ok = false with %s set", job.EnvJobID)
			}
			want := fmt.Sprintf("%s=%q", c.badVar, c.badValue)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
			if !strings.Contains(err.Error(), "oshrun") {
				t.Errorf("error %q does not say how to start PEs", err)
			}
		})
	}
}

func FuzzSpecFromEnv(f *testing.F) {
	f.Add("1f", "4", "2", "2", "3", "777")
	f.Add("", "4", "2", "2", "3", "777")
	f.Add("zz", "", "", "", "", "")
	f.Add("ffffffffffffffff", "1", "0", "1", "0", "-1")
	f.Add("1", "2147483648", "2147483647", "1", "2147483647", "0")
	f.Add("1", "-0", "+0", "+1", "00", "")
	f.Fuzz(func(t *testing.T, id, npes, pe, local, fd, launcher string) {
		env := map[string]string{
			job.EnvJobID: id, job.EnvNPEs: npes, job.EnvPE: pe,
			job.EnvLocalPEs: local, job.EnvFD: fd, job.EnvLauncher: launcher,
		}
		spec, ok, err := job.SpecFromEnv(envOf(env))
		if id == "" {
			if ok || err != nil || spec != (job.Spec{}) {
				t.Fatalf("no job id: %+v, %v, %v", spec, ok, err)
			}
			return
		}
		if !ok {
			t.Fatalf("job id %q set but ok = false", id)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "GOSHMEM_") {
				t.Fatalf("error %q names no variable", err)
			}
			return
		}
		if spec.NPEs < 1 || spec.FirstPE < 0 || spec.LocalPEs < 1 || spec.FD < 0 {
			t.Fatalf("accepted out-of-range %+v", spec)
		}
		if spec.FirstPE >= spec.NPEs || spec.LocalPEs > spec.NPEs-spec.FirstPE {
			t.Fatalf("accepted PEs [%d, %d+%d) outside a %d-PE job", spec.FirstPE, spec.FirstPE, spec.LocalPEs, spec.NPEs)
		}
		if got := strconv.FormatUint(spec.JobID, 16); !strings.EqualFold(strings.TrimLeft(id, "0"), strings.TrimLeft(got, "0")) {
			t.Fatalf("job id %q parsed as %s", id, got)
		}
	})
}

// TestTaskClaim: a claim word packs and unpacks both ends and the
// batch flag; the owner's adds move front only, also past back, and
// thieves' adds move back only, also below front and below 0; random
// interleavings of owner batches and thief claims (single chunks, or
// batches where the flag says so) hand out every chunk exactly once.
func TestTaskClaim(t *testing.T) {
	for _, tc := range []struct {
		front, back int
		batch       bool
	}{
		{0, 0, false}, {3, 10, true}, {0, 1, false}, {job.TaskMaxChunks, job.TaskMaxChunks, true}, {5, -3, true},
	} {
		c := job.TaskClaim(tc.front, tc.back, tc.batch)
		if f, b, bt := job.TaskUnpack(c); f != tc.front || b != tc.back || bt != tc.batch {
			t.Errorf("TaskUnpack(TaskClaim(%d, %d, %v)) = %d, %d, %v", tc.front, tc.back, tc.batch, f, b, bt)
		}
		// The furthest front can go: past back by a batch (at most
		// the count); back below front by less than the count.
		far := c + uint64(job.TaskMaxChunks)
		if f, b, bt := job.TaskUnpack(far); f != tc.front+job.TaskMaxChunks || b != tc.back || bt != tc.batch {
			t.Errorf("front of (%d, %d) moved by %d unpacks as %d, %d, %v", tc.front, tc.back, job.TaskMaxChunks, f, b, bt)
		}
		low := c + uint64(tc.back-tc.front+job.TaskMaxChunks)*job.TaskClaimBack
		if f, b, bt := job.TaskUnpack(low); f != tc.front || b != tc.front-job.TaskMaxChunks || bt != tc.batch {
			t.Errorf("back of (%d, %d) moved to %d unpacks as %d, %d, %v", tc.front, tc.back, tc.front-job.TaskMaxChunks, f, b, bt)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 4000 {
		n := 1 + rng.IntN(100)
		batch := trial%2 == 1
		share := 2
		if !batch {
			share = 4
		}
		first := max(n/share, 1)
		c := job.TaskClaim(min(first, n), n, batch)
		got := make([]int, n)
		for i := range min(first, n) {
			got[i]++
		}
		owner := true // the owner still claims
		for owner || rng.IntN(4) != 0 {
			f, b, bt := job.TaskUnpack(c)
			if owner && (rng.IntN(2) == 0 || f >= b) {
				k := max((b-f)/share, 1)
				c += uint64(k)
				f2, b2, _ := job.TaskUnpack(c)
				lo, hi := f2-k, min(f2, b2)
				if lo >= hi {
					owner = false
				}
				for i := lo; i < hi; i++ {
					got[i]++
				}
				continue
			}
			if f >= b && rng.IntN(3) != 0 {
				continue // a thief that loads first and sees none left
			}
			k := 1
			if bt {
				k = max((b-f)/2, 1)
			}
			c += uint64(k) * job.TaskClaimBack
			f2, b2, _ := job.TaskUnpack(c)
			for i := max(b2, f2); i < b2+k; i++ {
				got[i]++
			}
		}
		for i, k := range got {
			if k != 1 {
				t.Fatalf("trial %d, %d chunks, batch %v: chunk %d claimed %d times (%v)", trial, n, batch, i, k, got)
			}
		}
	}
}

// TestAbortSettled checks that Settled waits for a record being
// written and reports the writer's failure, and that a record whose
// writer never publishes it is reported as torn after about TornAfter,
// not waited on forever.
func TestAbortSettled(t *testing.T) {
	var a job.Abort
	if _, _, _, _, ok := a.Settled(); ok {
		t.Fatal("Settled on a fresh Abort reports a failure")
	}
	// A writer that publishes a millisecond after claiming.
	a.State.Store(1)
	go func() {
		time.Sleep(time.Millisecond)
		a.Kind.Store(job.AbortSignal)
		a.PE.Store(3)
		a.Pid.Store(77)
		a.Code.Store(9)
		a.State.Store(2)
	}()
	if kind, pe, pid, code, ok := a.Settled(); !ok || kind != job.AbortSignal || pe != 3 || pid != 77 || code != 9 {
		t.Fatalf("Settled = %d, %d, %d, %d, %v; want the writer's %d, 3, 77, 9, true", kind, pe, pid, code, ok, job.AbortSignal)
	}
	// A writer that died after claiming.
	var b job.Abort
	b.State.Store(1)
	start := time.Now()
	kind, pe, _, _, ok := b.Settled()
	if took := time.Since(start); took < job.TornAfter || took > job.TornAfter+2*time.Second {
		t.Errorf("Settled on a torn record returned after %v; want about %v", took, job.TornAfter)
	}
	if !ok || kind != job.AbortTorn || pe != -1 {
		t.Fatalf("Settled on a torn record = %d, %d, %v; want AbortTorn, -1, true", kind, pe, ok)
	}
	if got := job.Describe(kind, pe, 0, 0); !strings.Contains(got, "died while recording") {
		t.Errorf("Describe(AbortTorn) = %q", got)
	}
}

// TestExitStatus: a GlobalExit code becomes the low 8 bits of the exit
// status, and never a success unless it is 0.
func TestExitStatus(t *testing.T) {
	for _, c := range []struct{ code, want int }{
		{0, 0}, {1, 1}, {7, 7}, {255, 255}, {256, 1}, {512, 1}, {300, 44}, {1000, 232}, {-1, 255}, {-256, 1},
	} {
		if got := job.ExitStatus(c.code); got != c.want {
			t.Errorf("ExitStatus(%d) = %d, want %d", c.code, got, c.want)
		}
	}
}
