package pmi

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environment variables the launchers set, and goshmem's own.
const (
	EnvFD     = "PMI_FD"
	EnvPort   = "PMI_PORT"
	EnvID     = "PMI_ID"
	EnvRank   = "PMI_RANK"
	EnvSize   = "PMI_SIZE"
	EnvJobID  = "PMI_JOBID"
	EnvChoice = "SHMEM_PMI" // pmi1, pmi2 or auto
)

// Versions of the wire protocol.
const (
	V1 = 1
	V2 = 2
)

// maxKeyV2 and maxValV2 are PMI-2's key and value limits (pmi2.h).
const (
	maxKeyV2 = 64
	maxValV2 = 1024
)

// Client is one process's connection to its launcher's PMI server. It
// is not safe for concurrent use: the start-up code of one process uses
// it from one goroutine.
type Client struct {
	conn     net.Conn
	r        *bufio.Reader
	version  int
	rank     int
	size     int
	appnum   int
	kvsname  string // PMI-1's key-value space
	jobID    string
	launcher string
	keyMax   int // longest key the server takes
	valMax   int // longest value (encoded) Put sends in one key
	timeout  time.Duration
	put      map[string]bool
	done     bool
}

// Rank returns this process's rank.
func (c *Client) Rank() int { return c.rank }

// Size returns the number of processes in the job.
func (c *Client) Size() int { return c.size }

// Version returns the wire protocol in use, V1 or V2.
func (c *Client) Version() int { return c.version }

// Launcher names the launcher detected from the environment: "slurm",
// "hydra" or "pmi" (some other PMI server).
func (c *Client) Launcher() string { return c.launcher }

// JobID returns the job's identifier as the server gives it (PMI-2's
// job id, PMI-1's key-value space name), the same in every process.
func (c *Client) JobID() string { return c.jobID }

// DetectLauncher names the launcher from its environment variables.
func DetectLauncher(getenv func(string) string) string {
	switch {
	case getenv("SLURM_STEP_ID") != "" || getenv("SLURM_JOB_ID") != "":
		return "slurm"
	case getenv("HYDI_CONTROL_FD") != "" || getenv("HYDRA_PROXY") != "" || getenv("MPIR_CVAR_CH3_INTERFACE_HOSTNAME") != "" || getenv("PMI_SUBVERSION") != "",
		// Over ssh with -iface, hydra's processes have neither of the
		// first ones and -iface replaces the host name: its local
		// rank variables (MPICH's and Intel MPI's hydra) remain.
		getenv("MPI_LOCALNRANKS") != "" || getenv("MPIR_CVAR_NEMESIS_TCP_NETWORK_IFACE") != "":
		return "hydra"
	}
	return "pmi"
}

// FromEnv connects to the PMI server the environment names and
// initializes the client. ok is false, with no error, when the process
// was not started by a PMI launcher (neither PMI_FD nor PMI_PORT set).
// timeout bounds each exchange with the server (0: 60 s; a fence waits
// for every process, so it must cover the slowest one's start-up).
func FromEnv(getenv func(string) string, timeout time.Duration) (c *Client, ok bool, err error) {
	fdStr, port := getenv(EnvFD), getenv(EnvPort)
	if fdStr == "" && port == "" {
		return nil, false, nil
	}
	want := strings.ToLower(getenv(EnvChoice))
	switch want {
	case "", "auto", "pmi1", "pmi2":
	default:
		return nil, true, fmt.Errorf("pmi: %s=%q: use pmi1, pmi2 or auto", EnvChoice, getenv(EnvChoice))
	}
	var conn net.Conn
	if fdStr != "" {
		fd, err := strconv.Atoi(fdStr)
		if err != nil || fd < 0 {
			return nil, true, fmt.Errorf("pmi: %s=%q is not a descriptor number; start the program with srun --mpi=pmi2 or mpiexec", EnvFD, fdStr)
		}
		f := os.NewFile(uintptr(fd), EnvFD)
		conn, err = net.FileConn(f)
		f.Close() // FileConn holds a duplicate
		if err != nil {
			return nil, true, fmt.Errorf("pmi: %s=%d is not a connected socket (%v); start the program with srun --mpi=pmi2 or mpiexec", EnvFD, fd, err)
		}
	} else {
		conn, err = net.DialTimeout("tcp", port, 10*time.Second)
		if err != nil {
			return nil, true, fmt.Errorf("pmi: connecting to the PMI server at %s=%s: %v", EnvPort, port, err)
		}
	}
	rank, size := -1, -1
	if s := getenv(EnvRank); s != "" {
		if rank, err = strconv.Atoi(s); err != nil || rank < 0 {
			conn.Close()
			return nil, true, fmt.Errorf("pmi: %s=%q is not a rank", EnvRank, s)
		}
	}
	if s := getenv(EnvSize); s != "" {
		if size, err = strconv.Atoi(s); err != nil || size < 1 {
			conn.Close()
			return nil, true, fmt.Errorf("pmi: %s=%q is not a job size", EnvSize, s)
		}
	}
	c, err = New(conn, Options{
		Rank: rank, Size: size, Version: want, ID: getenv(EnvID), JobID: getenv(EnvJobID),
		Launcher: DetectLauncher(getenv), Timeout: timeout,
	})
	return c, true, err
}

// Options are what New needs beyond the connection.
type Options struct {
	Rank, Size int    // from PMI_RANK and PMI_SIZE; -1: unknown (PMI-1 over PMI_PORT learns them)
	Version    string // "pmi1", "pmi2", "auto" or ""
	ID         string // PMI_ID, for the PMI-1 initack over PMI_PORT
	JobID      string // PMI_JOBID, passed on in PMI-2's fullinit
	Launcher   string
	Timeout    time.Duration
}

// New initializes a client on conn, which it owns from then on (Close
// closes it).
func New(conn net.Conn, o Options) (*Client, error) {
	c := &Client{
		conn: conn, r: bufio.NewReaderSize(conn, maxLine), rank: o.Rank, size: o.Size,
		launcher: o.Launcher, timeout: o.Timeout, put: map[string]bool{},
	}
	if c.timeout <= 0 {
		c.timeout = 60 * time.Second
	}
	if c.launcher == "" {
		c.launcher = "pmi"
	}
	err := c.init(o)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

func (c *Client) init(o Options) error {
	if o.ID != "" {
		if err := c.initack(o.ID); err != nil {
			return err
		}
	}
	versions := []int{V2, V1}
	switch o.Version {
	case "pmi1":
		versions = []int{V1}
	case "pmi2":
		versions = []int{V2}
	}
	var lastErr error
	for _, v := range versions {
		sub := "1"
		if v == V2 {
			sub = "0"
		}
		r, err := c.roundV1(FormatV1("init", "pmi_version", strconv.Itoa(v), "pmi_subversion", sub), "response_to_init")
		if err != nil {
			return err // a broken connection: no fallback
		}
		if rc, _ := r.Get("rc"); rc != "0" && rc != "" {
			lastErr = fmt.Errorf("pmi: the server refused PMI-%d (rc=%s)", v, rc)
			continue
		}
		if got, _ := r.Get("pmi_version"); got != "" && got != strconv.Itoa(v) {
			lastErr = fmt.Errorf("pmi: asked for PMI-%d, the server answered version %s", v, got)
			continue
		}
		c.version = v
		if v == V2 {
			return c.initV2(o.JobID)
		}
		return c.initV1()
	}
	return lastErr
}

// initack is PMI-1's handshake over PMI_PORT: the server answers with
// the size, rank and debug flag.
func (c *Client) initack(id string) error {
	if _, err := c.roundV1(FormatV1("initack", "pmiid", id), "initack"); err != nil {
		return err
	}
	for _, want := range []string{"size", "rank", "debug"} {
		r, err := c.recvV1("set")
		if err != nil {
			return err
		}
		v, ok := r.Get(want)
		if !ok {
			return fmt.Errorf("%w: initack: expected set %s=..., got %v", errWire, want, r)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%w: initack: %s=%q", errWire, want, v)
		}
		switch want {
		case "size":
			c.size = n
		case "rank":
			c.rank = n
		}
	}
	return nil
}

func (c *Client) initV1() error {
	r, err := c.roundV1(FormatV1("get_maxes"), "maxes")
	if err != nil {
		return err
	}
	c.keyMax, c.valMax = 64, 256
	kvsMax := 256
	for _, m := range []struct {
		name string
		v    *int
	}{{"keylen_max", &c.keyMax}, {"vallen_max", &c.valMax}, {"kvsname_max", &kvsMax}} {
		if v, ok := r.Get(m.name); ok {
			// A length above what a line holds is the server's to
			// give: the room left on a line bounds it below.
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("%w: the server's maxes reply gave %s=%q, not a positive length", errWire, m.name, v)
			}
			*m.v = n
		}
	}
	if r, err = c.roundV1(FormatV1("get_my_kvsname"), "my_kvsname"); err != nil {
		return err
	}
	c.kvsname, _ = r.Get("kvsname")
	if c.kvsname == "" || len(c.kvsname) > kvsMax {
		return fmt.Errorf("%w: get_my_kvsname gave %q", errWire, c.kvsname)
	}
	c.jobID = c.kvsname
	if r, err = c.roundV1(FormatV1("get_appnum"), "appnum"); err == nil {
		c.appnum, _ = strconv.Atoi(first(r.Get("appnum")))
	} else {
		return err
	}
	if c.rank < 0 || c.size < 1 || c.rank >= c.size {
		return fmt.Errorf("pmi: rank %d of %d: PMI-1 needs %s and %s from the launcher", c.rank, c.size, EnvRank, EnvSize)
	}
	// A put line is "cmd=put kvsname=K key=KEY value=V\n": leave room
	// for the longest key this client makes.
	room := maxLine - len("cmd=put kvsname= key= value=\n") - len(c.kvsname) - c.keyMax
	c.valMax = min(c.valMax, room)
	if c.valMax < 16 || c.keyMax < 16 {
		return fmt.Errorf("pmi: the server's limits (keys %d, values %d bytes) are too small", c.keyMax, c.valMax)
	}
	return nil
}

func (c *Client) initV2(jobID string) error {
	kv := []string{}
	if c.rank >= 0 {
		kv = append(kv, "pmirank", strconv.Itoa(c.rank))
	}
	if jobID != "" {
		kv = append(kv, "pmijobid", jobID)
	}
	kv = append(kv, "threaded", "FALSE")
	r, err := c.roundV2(FormatV2("fullinit", kv...), "fullinit-response")
	if err != nil {
		return err
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{"rank", &c.rank}, {"size", &c.size}, {"appnum", &c.appnum}} {
		if v, ok := r.Get(f.key); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%w: fullinit-response %s=%q", errWire, f.key, v)
			}
			*f.dst = n
		}
	}
	if c.rank < 0 || c.size < 1 || c.rank >= c.size {
		return fmt.Errorf("pmi: fullinit gave rank %d of %d", c.rank, c.size)
	}
	c.keyMax, c.valMax = maxKeyV2, maxValV2
	// The job id: job-getid where the server has it, else PMI_JOBID.
	c.jobID = jobID
	if r, err := c.roundV2(FormatV2("job-getid"), "job-getid-response"); err == nil {
		if id, ok := r.Get("jobid"); ok && id != "" {
			c.jobID = id
		}
	} else if !errors.Is(err, errRefused) {
		return err
	}
	return nil
}

// errRefused marks a response with a non-zero rc.
var errRefused = errors.New("pmi: the server refused the request")

func first(s string, _ bool) string { return s }

// deadline arms the connection's deadline for one exchange.
func (c *Client) deadline() { c.conn.SetDeadline(time.Now().Add(c.timeout)) }

// send writes one request in one write: Slurm's PMI-1 handler reads one
// request per read(2), and a request split across writes may be split
// across reads.
func (c *Client) send(b []byte) error {
	c.deadline()
	n, err := c.conn.Write(b)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("pmi: writing to the PMI server: %w", err)
	}
	return nil
}

// recvV1 reads one PMI-1 response and checks its name.
func (c *Client) recvV1(want string) (Cmd, error) {
	c.deadline()
	r, err := readV1(c.r)
	if err != nil {
		return Cmd{}, c.readErr(err)
	}
	if r.Name != want {
		return Cmd{}, fmt.Errorf("%w: expected cmd=%s from the PMI server, got cmd=%s", errWire, want, r.Name)
	}
	return r, nil
}

func (c *Client) roundV1(req []byte, want string) (Cmd, error) {
	if err := c.send(req); err != nil {
		return Cmd{}, err
	}
	return c.recvV1(want)
}

// roundV2 sends a PMI-2 request and reads its response, which must be
// want with rc=0 (errRefused otherwise, with the server's message).
func (c *Client) roundV2(req []byte, want string) (Cmd, error) {
	if err := c.send(req); err != nil {
		return Cmd{}, err
	}
	c.deadline()
	r, err := readV2(c.r)
	if err != nil {
		return Cmd{}, c.readErr(err)
	}
	if r.Name != want {
		return Cmd{}, fmt.Errorf("%w: expected cmd=%s from the PMI server, got cmd=%s", errWire, want, r.Name)
	}
	if rc, ok := r.Get("rc"); ok && rc != "0" {
		msg, _ := r.Get("errmsg")
		return r, fmt.Errorf("%w: %s rc=%s %s", errRefused, want, rc, msg)
	}
	return r, nil
}

func (c *Client) readErr(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("pmi: no answer from the PMI server within %v (did another process of the job fail to start?)", c.timeout)
	}
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("pmi: the PMI server closed the connection (the launcher ended the job?)")
	}
	return fmt.Errorf("pmi: reading from the PMI server: %w", err)
}

// key is the server-side name of this client's key k for rank r, piece i.
func key(r int, k string, i int) string {
	s := "gs" + strconv.Itoa(r) + "." + k
	if i > 0 {
		s += "." + strconv.Itoa(i)
	}
	return s
}

// validKey reports whether k may name a key: letters, digits, '-', '_'.
func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		ch := k[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
			return false
		}
	}
	return true
}

// Put publishes value under key for this rank; the others read it with
// Get(rank, key) after the next Fence. value may hold any bytes and be
// of any length: it is encoded and split (see the package comment).
// Putting a key twice, or a key that is not letters, digits, '-' and
// '_', is a programmer error and panics; a key longer than the server
// takes (its keylen_max) is an error.
func (c *Client) Put(k string, value []byte) error {
	if !validKey(k) {
		panic(fmt.Sprintf("pmi: Put: key %q: use letters, digits, '-' and '_'", k))
	}
	if c.put[k] {
		panic(fmt.Sprintf("pmi: Put: key %q was already put by rank %d; PMI keys are put once", k, c.rank))
	}
	if n := len(key(c.rank, k, 1<<20)); n > c.keyMax {
		return fmt.Errorf("pmi: key %q of rank %d takes up to %d bytes on the wire, but the launcher's PMI server takes keys of at most %d (its keylen_max): use a launcher with longer PMI keys (MPICH's hydra: 64 bytes), or SHMEM_PMI=pmi2", k, c.rank, n, c.keyMax)
	}
	enc := base64.RawURLEncoding.EncodeToString(value)
	// The first piece carries "n:" before its share.
	per := c.valMax - 8
	n := max(1, (len(enc)+per-1)/per)
	for i := range n {
		piece := enc[min(i*per, len(enc)):min((i+1)*per, len(enc))]
		if i == 0 {
			piece = strconv.Itoa(n) + ":" + piece
		}
		if err := c.putRaw(key(c.rank, k, i), piece); err != nil {
			return err
		}
	}
	c.put[k] = true
	return nil
}

func (c *Client) putRaw(k, v string) error {
	if c.version == V2 {
		_, err := c.roundV2(FormatV2("kvs-put", "key", k, "value", v), "kvs-put-response")
		return err
	}
	r, err := c.roundV1(FormatV1("put", "kvsname", c.kvsname, "key", k, "value", v), "put_result")
	if err != nil {
		return err
	}
	if rc, _ := r.Get("rc"); rc != "0" {
		msg, _ := r.Get("msg")
		return fmt.Errorf("%w: put %s: rc=%s %s", errRefused, k, rc, msg)
	}
	return nil
}

// Fence makes every Put of every rank before it visible to every Get
// after it: PMI-1's barrier, PMI-2's kvs-fence. Every rank must call it.
func (c *Client) Fence() error {
	if c.version == V2 {
		_, err := c.roundV2(FormatV2("kvs-fence"), "kvs-fence-response")
		return err
	}
	_, err := c.roundV1(FormatV1("barrier_in"), "barrier_out")
	return err
}

// ErrNotFound is returned by Get for a key that was not put (or not
// before the last Fence).
var ErrNotFound = errors.New("pmi: key not found")

// Get returns the value rank put under key.
func (c *Client) Get(rank int, k string) ([]byte, error) {
	if !validKey(k) || rank < 0 || rank >= c.size {
		panic(fmt.Sprintf("pmi: Get: rank %d key %q: the rank must be in [0, %d) and the key letters, digits, '-' and '_'", rank, k, c.size))
	}
	v, err := c.getRaw(rank, key(rank, k, 0))
	if err != nil {
		return nil, err
	}
	ns, rest, ok := strings.Cut(v, ":")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil || n < 1 || n > 1<<20 {
		return nil, fmt.Errorf("%w: value of %s from rank %d does not start with its piece count", errWire, k, rank)
	}
	var b strings.Builder
	b.WriteString(rest)
	for i := 1; i < n; i++ {
		p, err := c.getRaw(rank, key(rank, k, i))
		if err != nil {
			return nil, err
		}
		b.WriteString(p)
	}
	out, err := base64.RawURLEncoding.DecodeString(b.String())
	if err != nil {
		return nil, fmt.Errorf("%w: value of %s from rank %d: %v", errWire, k, rank, err)
	}
	return out, nil
}

func (c *Client) getRaw(rank int, k string) (string, error) {
	if c.version == V2 {
		r, err := c.roundV2(FormatV2("kvs-get", "srcid", strconv.Itoa(rank), "key", k), "kvs-get-response")
		if err != nil {
			return "", err
		}
		if f, _ := r.Get("found"); !strings.EqualFold(f, "true") {
			return "", fmt.Errorf("%w: %s (rank %d)", ErrNotFound, k, rank)
		}
		v, _ := r.Get("value")
		return v, nil
	}
	r, err := c.roundV1(FormatV1("get", "kvsname", c.kvsname, "key", k), "get_result")
	if err != nil {
		return "", err
	}
	if rc, _ := r.Get("rc"); rc != "0" {
		return "", fmt.Errorf("%w: %s (rank %d)", ErrNotFound, k, rank)
	}
	v, _ := r.Get("value")
	return v, nil
}

// ProcessMapping returns the node index of every rank from
// PMI_process_mapping, and false when the launcher does not provide it.
func (c *Client) ProcessMapping() ([]int, bool, error) {
	var v string
	if c.version == V2 {
		r, err := c.roundV2(FormatV2("info-getjobattr", "key", "PMI_process_mapping"), "info-getjobattr-response")
		if err != nil {
			if errors.Is(err, errRefused) {
				return nil, false, nil
			}
			return nil, false, err
		}
		if f, _ := r.Get("found"); !strings.EqualFold(f, "true") {
			return nil, false, nil
		}
		v, _ = r.Get("value")
	} else {
		r, err := c.roundV1(FormatV1("get", "kvsname", c.kvsname, "key", "PMI_process_mapping"), "get_result")
		if err != nil {
			return nil, false, err
		}
		if rc, _ := r.Get("rc"); rc != "0" {
			return nil, false, nil
		}
		v, _ = r.Get("value")
	}
	m, err := ParseMapping(v, c.size)
	if err != nil {
		return nil, false, err
	}
	return m, true, nil
}

// Abort asks the launcher to end the whole job with status code,
// logging msg. The server does not answer; the launcher kills the job's
// processes, this one included, so the caller should exit if Abort
// returns.
//
// Under hydra it sends PMI-1's abort, whatever the protocol: hydra 4.0
// does not know PMI-2's abort command and fails itself on it (mpiexec
// exits 255 after internal errors), and it reads each command in the
// protocol its first bytes show (a PMI-1 command starts with "cmd="),
// so PMI-1's abort ends the job with the code on a PMI-2 connection too.
func (c *Client) Abort(code int, msg string) error {
	if c.version == V2 && c.launcher != "hydra" {
		return c.send(FormatV2("abort", "isworld", "TRUE", "msg", msg))
	}
	return c.send(FormatV1("abort", "exitcode", strconv.Itoa(code)))
}

// Finalize tells the launcher that this process has finished with PMI
// (it exits normally) and closes the connection.
func (c *Client) Finalize() error {
	if c.done {
		return nil
	}
	c.done = true
	var err error
	if c.version == V2 {
		_, err = c.roundV2(FormatV2("finalize"), "finalize-response")
	} else {
		_, err = c.roundV1(FormatV1("finalize"), "finalize_ack")
	}
	c.conn.Close()
	return err
}

// FinalizeWithin is Finalize waiting at most d for the server's answer
// (less than the client's timeout; e.g. a process about to exit).
func (c *Client) FinalizeWithin(d time.Duration) error {
	if d < c.timeout {
		c.timeout = d
	}
	return c.Finalize()
}

// Close closes the connection without finalizing (the launcher then
// sees the process end without PMI finalize).
func (c *Client) Close() error {
	c.done = true
	return c.conn.Close()
}
