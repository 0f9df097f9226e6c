package pmi

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseV1(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Cmd
		err  bool
	}{
		{"cmd=barrier_out", Cmd{Name: "barrier_out"}, false},
		{"cmd=get_result rc=0 msg=success value=a=b", Cmd{"get_result", []string{"rc", "msg", "value"}, []string{"0", "success", "a=b"}}, false},
		{"cmd=maxes  kvsname_max=256 keylen_max=64\t", Cmd{"maxes", []string{"kvsname_max", "keylen_max"}, []string{"256", "64"}}, false},
		{"cmd=get_result rc=0 value=", Cmd{"get_result", []string{"rc", "value"}, []string{"0", ""}}, false},
		{"rc=0 cmd=x", Cmd{}, true},
		{"cmd=x junk", Cmd{}, true},
		{"", Cmd{}, true},
		{"=x", Cmd{}, true},
	} {
		got, err := ParseV1(c.in)
		if (err != nil) != c.err || !c.err && !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseV1(%q) = %+v, %v; want %+v, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestParseV2(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Cmd
		err  bool
	}{
		{"cmd=kvs-fence-response;rc=0;", Cmd{"kvs-fence-response", []string{"rc"}, []string{"0"}}, false},
		{"cmd=kvs-get-response;found=TRUE;value=a;;b=c;;;rc=0;", Cmd{"kvs-get-response", []string{"found", "value", "rc"}, []string{"TRUE", "a;b=c;", "0"}}, false},
		{"cmd=x;value=\n =;", Cmd{"x", []string{"value"}, []string{"\n ="}}, false},
		{"cmd=x;rc=0", Cmd{}, true},  // no terminator
		{"rc=0;cmd=x;", Cmd{}, true}, // cmd not first
		{"cmd=x;;", Cmd{}, true},     // "x;" then no terminator
		{"", Cmd{}, true},
		{"cmd=x;novalue;", Cmd{}, true},
	} {
		got, err := ParseV2(c.in)
		if (err != nil) != c.err || !c.err && !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseV2(%q) = %+v, %v; want %+v, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestFormatV2RoundTrip(t *testing.T) {
	b := FormatV2("kvs-put", "key", "k;1", "value", "v;;x=;")
	if got := string(b[:6]); got != fmt.Sprintf("%6d", len(b)-6) {
		t.Fatalf("length field %q for a %d-byte body", got, len(b)-6)
	}
	c, err := ParseV2(string(b[6:]))
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := c.Get("key"); k != "k;1" {
		t.Errorf("key %q", k)
	}
	if v, _ := c.Get("value"); v != "v;;x=;" {
		t.Errorf("value %q", v)
	}
}

func TestParseMapping(t *testing.T) {
	for _, c := range []struct {
		in   string
		size int
		want []int
	}{
		{"(vector,(0,2,2))", 4, []int{0, 0, 1, 1}},
		{"(vector,(0,2,2))", 3, []int{0, 0, 1}},
		{"(vector,(0,3,1))", 7, []int{0, 1, 2, 0, 1, 2, 0}}, // cyclic: the vector repeats
		{"(vector,(1,1,2),(0,1,1))", 4, []int{1, 1, 0, 1}},
		{" ( vector , (0,1,4) ) ", 4, []int{0, 0, 0, 0}},
		{"(vector,(5,1,1))", 1, []int{5}},
	} {
		got, err := ParseMapping(c.in, c.size)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseMapping(%q, %d) = %v, %v; want %v", c.in, c.size, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "(vector)", "(vector,(0,2))", "(vector,(0,0,1))", "(vector,(0,1,0))", "(vector,(a,1,1))",
		"(vector,(0,1,1)", "(vector,(0,1,1)),", "(hostlist,(0,1,1))", "(vector,(-1,1,1))", "(vector;(0,1,1))"} {
		if got, err := ParseMapping(bad, 4); err == nil {
			t.Errorf("ParseMapping(%q) = %v, want an error", bad, got)
		}
	}
	if _, err := ParseMapping("(vector,(0,1,1))", 0); err == nil {
		t.Error("ParseMapping for 0 ranks: want an error")
	}
}

func TestValidKey(t *testing.T) {
	for k, want := range map[string]bool{"host": true, "fd-token_2": true, "": false, "a.b": false, "a b": false, "a;b": false, "é": false} {
		if validKey(k) != want {
			t.Errorf("validKey(%q) = %v", k, !want)
		}
	}
}

// runClients starts size clients on s, runs fn on each concurrently and
// returns their errors.
func runClients(t *testing.T, s *fakeServer, version string, fn func(c *Client) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, s.size)
	for r := range s.size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := New(s.conn(r), Options{Rank: r, Size: s.size, Version: version, JobID: "4242", Timeout: 10 * time.Second})
			if err != nil {
				errs[r] = err
				return
			}
			errs[r] = fn(c)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	s.check()
}

// TestPutFenceGet: every rank puts values of every kind (empty, binary
// with the protocols' special bytes, longer than one server value),
// fences, and reads every rank's, under both protocols.
func TestPutFenceGet(t *testing.T) {
	values := func(r int) map[string][]byte {
		rng := rand.New(rand.NewPCG(uint64(r), 7))
		long := make([]byte, 5000+r)
		for i := range long {
			long[i] = byte(rng.Uint32())
		}
		return map[string][]byte{
			"empty":  {},
			"host":   []byte(fmt.Sprintf("h%d", r/2)),
			"binary": {0, ';', '=', ' ', '\n', 0xff, byte(r)},
			"long":   long,
		}
	}
	for _, v := range []struct {
		choice string
		want   int
		slurm  bool // length fields padded on the right
	}{{"pmi1", V1, false}, {"pmi2", V2, false}, {"auto", V2, false}, {"", V2, false}, {"pmi2", V2, true}} {
		t.Run(fmt.Sprintf("%s slurm-padding=%v", v.choice, v.slurm), func(t *testing.T) {
			s := newFakeServer(t, 4)
			s.padRight = v.slurm
			s.mapping = "(vector,(0,2,2))"
			runClients(t, s, v.choice, func(c *Client) error {
				if c.Version() != v.want {
					return fmt.Errorf("version %d, want %d", c.Version(), v.want)
				}
				if c.Size() != 4 {
					return fmt.Errorf("size %d", c.Size())
				}
				for k, val := range values(c.Rank()) {
					if err := c.Put(k, val); err != nil {
						return err
					}
				}
				if err := c.Fence(); err != nil {
					return err
				}
				for r := range c.Size() {
					for k, want := range values(r) {
						got, err := c.Get(r, k)
						if err != nil {
							return err
						}
						if !bytes.Equal(got, want) {
							return fmt.Errorf("Get(%d, %s) = %d bytes, want %d", r, k, len(got), len(want))
						}
					}
				}
				if _, err := c.Get(c.Rank(), "nothere"); !errors.Is(err, ErrNotFound) {
					return fmt.Errorf("Get of a key never put: %v, want ErrNotFound", err)
				}
				m, ok, err := c.ProcessMapping()
				if err != nil || !ok || !reflect.DeepEqual(m, []int{0, 0, 1, 1}) {
					return fmt.Errorf("ProcessMapping = %v, %v, %v", m, ok, err)
				}
				if c.JobID() == "" {
					return errors.New("no job id")
				}
				return c.Finalize()
			})
		})
	}
}

// TestAutoFallsBackToPMI1: a server that only speaks PMI-1 refuses the
// PMI-2 init; auto then initializes PMI-1 on the same connection, and
// an explicit pmi2 fails with a message.
func TestAutoFallsBackToPMI1(t *testing.T) {
	s := newFakeServer(t, 2)
	s.refuse2 = true
	runClients(t, s, "auto", func(c *Client) error {
		if c.Version() != V1 {
			return fmt.Errorf("version %d, want 1", c.Version())
		}
		if err := c.Put("x", []byte{1}); err != nil {
			return err
		}
		return c.Fence()
	})
	s2 := newFakeServer(t, 1)
	s2.refuse2 = true
	if _, err := New(s2.conn(0), Options{Rank: 0, Size: 1, Version: "pmi2"}); err == nil || !strings.Contains(err.Error(), "PMI-2") {
		t.Errorf("pmi2 against a PMI-1 server: %v, want an error naming PMI-2", err)
	}
}

func TestNoMapping(t *testing.T) {
	for _, v := range []string{"pmi1", "pmi2"} {
		s := newFakeServer(t, 1)
		runClients(t, s, v, func(c *Client) error {
			if m, ok, err := c.ProcessMapping(); ok || err != nil {
				return fmt.Errorf("%s: ProcessMapping = %v, %v, %v; want not provided", v, m, ok, err)
			}
			return nil
		})
	}
}

func TestPutTwicePanics(t *testing.T) {
	s := newFakeServer(t, 1)
	runClients(t, s, "pmi2", func(c *Client) error {
		if err := c.Put("k", nil); err != nil {
			return err
		}
		for _, k := range []string{"k", "bad key", ""} {
			func() {
				defer func() {
					if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "pmi: Put") {
						t.Errorf("Put(%q): panic %v, want one naming pmi: Put", k, p)
					}
				}()
				c.Put(k, nil)
			}()
		}
		return nil
	})
}

// TestMaxes: a PMI-1 server's maxes reply with values that are not
// lengths is an error naming the field (they were read as 0); keys
// shorter than a key the runtime makes are an error of Put, not a panic.
func TestMaxes(t *testing.T) {
	for _, tc := range []struct {
		kv   []string
		want string
	}{
		{[]string{"keylen_max", "abc"}, `keylen_max="abc"`},
		{[]string{"kvsname_max", "-1"}, `kvsname_max="-1"`},
		{[]string{"vallen_max", "99999999999999999999"}, `vallen_max="99999999999999999999"`},
		{[]string{"keylen_max", "0"}, "not a positive length"},
	} {
		s := newFakeServer(t, 1)
		s.maxes = tc.kv
		_, err := New(s.conn(0), Options{Rank: 0, Size: 1, Version: "pmi1", JobID: "4242", Timeout: 10 * time.Second})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("maxes %v: New = %v, want an error containing %q", tc.kv, err, tc.want)
		}
	}
	// A server whose values may be longer than a line: valid, bounded by
	// the line (a value longer than a line could never be sent).
	s := newFakeServer(t, 1)
	s.maxes = []string{"kvsname_max", "256", "keylen_max", "64", "vallen_max", "65536"}
	if _, err := New(s.conn(0), Options{Rank: 0, Size: 1, Version: "pmi1", JobID: "4242", Timeout: 10 * time.Second}); err != nil {
		t.Errorf("vallen_max 65536: New = %v, want a client", err)
	}
	s = newFakeServer(t, 1)
	s.maxes = []string{"keylen_max", "16"}
	c, err := New(s.conn(0), Options{Rank: 0, Size: 1, Version: "pmi1", JobID: "4242", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put("xport-long", nil); err == nil || !strings.Contains(err.Error(), "keylen_max") {
		t.Errorf("Put of a key longer than the server's 16 bytes = %v, want an error naming keylen_max", err)
	}
}

// TestFenceTimeout: a fence that the other ranks never reach ends with
// an error that says so, not a hang.
func TestFenceTimeout(t *testing.T) {
	s := newFakeServer(t, 2)
	c, err := New(s.conn(0), Options{Rank: 0, Size: 2, Version: "pmi1", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Fence(); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("Fence with a rank missing: %v, want a timeout error", err)
	}
}

func TestFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if c, ok, err := FromEnv(env(nil), 0); c != nil || ok || err != nil {
		t.Errorf("no PMI variables: %v %v %v, want not launched", c, ok, err)
	}
	for _, m := range []map[string]string{
		{"PMI_FD": "x"},
		{"PMI_FD": "-1"},
		{"PMI_FD": "0", "SHMEM_PMI": "pmi3"},
		{"PMI_PORT": "127.0.0.1:1"}, // nothing listens there
	} {
		if _, ok, err := FromEnv(env(m), time.Second); !ok || err == nil {
			t.Errorf("%v: ok %v err %v, want an error", m, ok, err)
		}
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"SLURM_JOB_ID": "3"}, "slurm"},
		{map[string]string{"SLURM_STEP_ID": "0", "PMI_FD": "5"}, "slurm"},
		{map[string]string{"HYDI_CONTROL_FD": "7", "MPI_LOCALNRANKS": "1"}, "hydra"}, // mpiexec on one host
		// mpiexec -iface eth0 over ssh: no HYDI_CONTROL_FD, no
		// MPIR_CVAR_CH3_INTERFACE_HOSTNAME (it went for PMI-2's abort,
		// which hydra 4.0 does not know, and mpiexec failed with 255)
		{map[string]string{"PMI_FD": "6", "MPI_LOCALNRANKS": "2", "MPI_LOCALRANKID": "0", "MPIR_CVAR_NEMESIS_TCP_NETWORK_IFACE": "eth0"}, "hydra"},
		{map[string]string{"PMI_FD": "6", "MPIR_CVAR_NEMESIS_TCP_NETWORK_IFACE": "eth0"}, "hydra"},
		{map[string]string{"PMI_FD": "6"}, "pmi"},
	} {
		if got := DetectLauncher(env(c.env)); got != c.want {
			t.Errorf("DetectLauncher(%v) = %q, want %q", c.env, got, c.want)
		}
	}
}

func FuzzParseV1(f *testing.F) {
	for _, s := range []string{"cmd=get_result rc=0 value=x", "cmd=maxes kvsname_max=256", "", "cmd="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseV1(s)
		if err != nil {
			return
		}
		// What parsed formats back to something that parses the same.
		kv := []string{}
		for i := range c.Keys {
			kv = append(kv, c.Keys[i], c.Vals[i])
		}
		c2, err := ParseV1(strings.TrimSuffix(string(FormatV1(c.Name, kv...)), "\n"))
		if err != nil || !reflect.DeepEqual(c, c2) {
			t.Fatalf("%q parsed as %+v, formatted and parsed as %+v, %v", s, c, c2, err)
		}
	})
}

func FuzzParseV2(f *testing.F) {
	for _, s := range []string{"cmd=kvs-get-response;found=TRUE;value=a;;b;rc=0;", "cmd=x;", "", ";;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseV2(s)
		if err != nil {
			return
		}
		kv := []string{}
		for i := range c.Keys {
			kv = append(kv, c.Keys[i], c.Vals[i])
		}
		b := FormatV2(c.Name, kv...)
		c2, err := ParseV2(string(b[6:]))
		if err != nil || !reflect.DeepEqual(c, c2) {
			t.Fatalf("%q parsed as %+v, formatted and parsed as %+v, %v", s, c, c2, err)
		}
	})
}

func FuzzParseMapping(f *testing.F) {
	f.Add("(vector,(0,2,2))", 4)
	f.Add("(vector,(1,1,2),(0,1,1))", 9)
	f.Fuzz(func(t *testing.T, s string, size int) {
		if size <= 0 || size > 1<<12 {
			return
		}
		m, err := ParseMapping(s, size)
		if err != nil {
			return
		}
		if len(m) != size {
			t.Fatalf("%q: %d ranks mapped, want %d", s, len(m), size)
		}
		for r, n := range m {
			if n < 0 {
				t.Fatalf("%q: rank %d on node %d", s, r, n)
			}
		}
	})
}

// TestAbort: Abort reaches the server as one request of the protocol in
// use: PMI-2's abort with isworld and the message (its ';' escaped and
// read back whole), PMI-1's abort with the exit code.
func TestAbort(t *testing.T) {
	const msg = "goshmem: PE 1 failed; heap=8m"
	for _, v := range []struct {
		choice string
		want   map[string]string
	}{
		{"pmi2", map[string]string{"isworld": "TRUE", "msg": msg}},
		{"pmi1", map[string]string{"exitcode": "3"}},
	} {
		t.Run(v.choice, func(t *testing.T) {
			s := newFakeServer(t, 2)
			runClients(t, s, v.choice, func(c *Client) error {
				if c.Rank() != 1 {
					return c.Finalize()
				}
				return c.Abort(3, msg)
			})
			var got []string
			for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(time.Millisecond) {
				s.mu.Lock()
				got = append([]string(nil), s.aborted...)
				s.mu.Unlock()
				if len(got) > 0 {
					break
				}
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], "rank 1: ") {
				t.Fatalf("the server saw aborts %q, want one from rank 1", got)
			}
			s.mu.Lock()
			cmd := s.lastAbort
			s.mu.Unlock()
			for k, want := range v.want {
				if val, ok := cmd.Get(k); !ok || val != want {
					t.Errorf("abort's %s = %q (present %v), want %q", k, val, ok, want)
				}
			}
		})
	}
}

// TestFinalizeWithin: a process about to exit (GlobalExit) finalizes
// with a short bound: the request goes out in one write, and a server
// that never answers costs at most the bound, not the client's timeout.
func TestFinalizeWithin(t *testing.T) {
	for _, v := range []int{V1, V2} {
		a, b := net.Pipe()
		c := &Client{conn: a, r: bufio.NewReader(a), version: v, timeout: time.Hour}
		got := make(chan string, 1)
		go func() {
			buf := make([]byte, 256)
			n, _ := b.Read(buf)
			got <- string(buf[:n])
			// never answers
		}()
		start := time.Now()
		err := c.FinalizeWithin(100 * time.Millisecond)
		if err == nil {
			t.Errorf("PMI-%d: FinalizeWithin without an answer returned nil", v)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("PMI-%d: FinalizeWithin(100ms) took %v", v, took)
		}
		if req := <-got; !strings.Contains(req, "finalize") {
			t.Errorf("PMI-%d: request %q is not a finalize", v, req)
		}
		if err := c.Finalize(); err != nil {
			t.Errorf("PMI-%d: a second Finalize: %v, want nil (done once)", v, err)
		}
		b.Close()
	}
}

// TestUnserved: a process that a launcher started as one of several
// without a PMI server this package speaks is told so, naming the
// launcher and the command to use; a lone task, a process under oshrun
// (no launcher variables) and one with PMI are not.
func TestUnserved(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want []string // substrings; none: ""
	}{
		{map[string]string{}, nil},
		{map[string]string{"SLURM_STEP_NUM_TASKS": "1", "SLURM_PROCID": "0"}, nil},
		{map[string]string{"SLURM_JOB_ID": "7", "SLURM_NTASKS": "4"}, nil}, // an allocation, not a task of a step
		{map[string]string{"OMPI_COMM_WORLD_SIZE": "1", "OMPI_COMM_WORLD_RANK": "0"}, nil},
		{map[string]string{"SLURM_STEP_NUM_TASKS": "4", "SLURM_PROCID": "2"}, []string{"task 2 of 4", "srun --mpi=pmi2"}},
		{map[string]string{"SLURM_STEP_NUM_TASKS": "2"}, []string{"task ? of 2", "srun --mpi=pmi2"}},
		{map[string]string{"OMPI_COMM_WORLD_SIZE": "3", "OMPI_COMM_WORLD_RANK": "1"}, []string{"rank 1 of 3", "mpiexec.hydra", "oshrun"}},
		{map[string]string{"SLURM_STEP_NUM_TASKS": "x"}, nil},
	}
	for _, c := range cases {
		got := Unserved(func(k string) string { return c.env[k] })
		if len(c.want) == 0 {
			if got != "" {
				t.Errorf("%v: %q, want none", c.env, got)
			}
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%v: %q does not say %q", c.env, got, w)
			}
		}
	}
}
