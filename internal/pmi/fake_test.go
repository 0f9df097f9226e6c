package pmi

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// fakeServer is a PMI server for tests, in the manner of Slurm's
// mpi/pmi2 plugin: it takes each read(2) as exactly one request and
// fails the connection when a request arrives split across reads or
// several arrive in one, and it serves PMI-1 and PMI-2 on one socket
// after the PMI-1 init line.
type fakeServer struct {
	t        testing.TB
	size     int
	mapping  string   // PMI_process_mapping; "" for none
	refuse2  bool     // answer a PMI-2 init as a PMI-1-only server does
	padRight bool     // PMI-2 length fields padded on the right, as Slurm writes them
	maxes    []string // the maxes reply's key-value pairs (nil: 256, 64, 1024)

	mu        sync.Mutex
	kvs       map[string]string
	arrived   int
	gen       chan struct{}
	errs      []string
	aborted   []string
	lastAbort Cmd
}

func newFakeServer(t testing.TB, size int) *fakeServer {
	return &fakeServer{t: t, size: size, kvs: map[string]string{}, gen: make(chan struct{})}
}

// conn returns the client end of a new connection to the server.
func (s *fakeServer) conn(rank int) net.Conn {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	mk := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "pmi-test")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			s.t.Fatal(err)
		}
		return c
	}
	go s.serve(mk(fds[0]), rank)
	return mk(fds[1])
}

func (s *fakeServer) fail(format string, args ...any) {
	s.mu.Lock()
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

// check fails the test with the server's errors.
func (s *fakeServer) check() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.errs {
		s.t.Error("fake PMI server: " + e)
	}
}

// fence waits until every rank has arrived.
func (s *fakeServer) fence() {
	s.mu.Lock()
	g := s.gen
	s.arrived++
	if s.arrived == s.size {
		s.arrived = 0
		s.gen = make(chan struct{})
		close(g)
	}
	s.mu.Unlock()
	<-g
}

func (s *fakeServer) serve(c net.Conn, rank int) {
	defer c.Close()
	buf := make([]byte, 1<<16)
	version := 0
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		req := string(buf[:n])
		var cmd Cmd
		if version != 2 {
			if strings.Count(req, "\n") != 1 || !strings.HasSuffix(req, "\n") {
				s.fail("rank %d: a PMI-1 read of %q is not exactly one request line", rank, req)
				return
			}
			if len(req) > maxLine {
				s.fail("rank %d: PMI-1 line of %d bytes", rank, len(req))
				return
			}
			cmd, err = ParseV1(strings.TrimSuffix(req, "\n"))
		} else {
			l, _ := strconv.Atoi(strings.TrimLeft(req[:min(6, len(req))], " "))
			if len(req) < 6 || l != len(req)-6 {
				s.fail("rank %d: a PMI-2 read of %q is not exactly one request", rank, req)
				return
			}
			cmd, err = ParseV2(req[6:])
		}
		if err != nil {
			s.fail("rank %d: %v", rank, err)
			return
		}
		var out []byte
		get := func(k string) string { v, _ := cmd.Get(k); return v }
		switch cmd.Name {
		case "init":
			switch v := get("pmi_version"); {
			case v == "2" && s.refuse2:
				out = FormatV1("response_to_init", "pmi_version", "1", "pmi_subversion", "1", "rc", "-1")
			case v == "1" || v == "2":
				out = FormatV1("response_to_init", "pmi_version", v, "pmi_subversion", get("pmi_subversion"), "rc", "0")
				version, _ = strconv.Atoi(v)
				if version == 1 {
					version = -1 // PMI-1 lines from now on
				}
			default:
				s.fail("rank %d: init %v", rank, cmd)
				return
			}
		case "get_maxes":
			kv := s.maxes
			if kv == nil {
				kv = []string{"kvsname_max", "256", "keylen_max", "64", "vallen_max", "1024"}
			}
			out = FormatV1("maxes", append([]string{"rc", "0"}, kv...)...)
		case "get_my_kvsname":
			out = FormatV1("my_kvsname", "rc", "0", "kvsname", "kvs_4242_0")
		case "get_appnum":
			out = FormatV1("appnum", "rc", "0", "appnum", "0")
		case "put", "kvs-put":
			k, v := get("key"), get("value")
			s.mu.Lock()
			_, dup := s.kvs[k]
			s.kvs[k] = v
			s.mu.Unlock()
			if dup {
				s.fail("rank %d: key %q put twice", rank, k)
			}
			if cmd.Name == "put" {
				if get("kvsname") != "kvs_4242_0" {
					s.fail("rank %d: put into kvs %q", rank, get("kvsname"))
				}
				out = FormatV1("put_result", "rc", "0", "msg", "success")
			} else {
				out = FormatV2("kvs-put-response", "rc", "0")
			}
		case "barrier_in":
			s.fence()
			out = FormatV1("barrier_out", "rc", "0")
		case "kvs-fence":
			s.fence()
			out = FormatV2("kvs-fence-response", "rc", "0")
		case "get", "kvs-get":
			k := get("key")
			s.mu.Lock()
			v, ok := s.kvs[k]
			s.mu.Unlock()
			if k == "PMI_process_mapping" && s.mapping != "" {
				v, ok = s.mapping, true
			}
			switch {
			case cmd.Name == "get" && ok:
				out = FormatV1("get_result", "rc", "0", "msg", "success", "value", v)
			case cmd.Name == "get":
				out = FormatV1("get_result", "rc", "-1", "msg", "key_"+k+"_not_found", "value", "unknown")
			case ok:
				out = FormatV2("kvs-get-response", "found", "TRUE", "value", v, "rc", "0")
			default:
				out = FormatV2("kvs-get-response", "found", "FALSE", "rc", "0")
			}
		case "fullinit":
			if get("pmirank") != strconv.Itoa(rank) {
				s.fail("fullinit: pmirank %q, want %d", get("pmirank"), rank)
			}
			out = FormatV2("fullinit-response", "pmi-version", "2", "pmi-subversion", "0", "rank", strconv.Itoa(rank),
				"size", strconv.Itoa(s.size), "appnum", "0", "debugged", "FALSE", "pmiverbose", "0", "rc", "0")
		case "job-getid":
			out = FormatV2("job-getid-response", "jobid", "job;4242", "rc", "0")
		case "info-getjobattr":
			if s.mapping == "" || get("key") != "PMI_process_mapping" {
				out = FormatV2("info-getjobattr-response", "found", "FALSE", "rc", "0")
			} else {
				out = FormatV2("info-getjobattr-response", "found", "TRUE", "value", s.mapping, "rc", "0")
			}
		case "finalize":
			if version == 2 {
				out = FormatV2("finalize-response", "rc", "0")
			} else {
				out = FormatV1("finalize_ack", "rc", "0")
			}
		case "abort":
			s.mu.Lock()
			s.aborted = append(s.aborted, fmt.Sprintf("rank %d: %v", rank, cmd))
			s.lastAbort = cmd
			s.mu.Unlock()
			return
		default:
			s.fail("rank %d: unknown command %q", rank, cmd.Name)
			return
		}
		if s.padRight && version == 2 && len(out) > 6 && out[0] == ' ' {
			n := strings.TrimSpace(string(out[:6]))
			copy(out, fmt.Sprintf("%-6s", n))
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}
