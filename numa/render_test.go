package numa

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// renderTrees are the fake machines of testdata that the golden files
// cover.
var renderTrees = []string{"2socket-smt", "4numa-socket", "offline", "memoryless", "cpuset", "cpuset-v1", "2node", "nonode"}

// render returns WriteHardware's and WriteTree's output, as the golden
// files hold them.
func render(t *Topology) string {
	var b strings.Builder
	b.WriteString("# WriteHardware\n")
	t.WriteHardware(&b)
	b.WriteString("# WriteTree\n")
	t.WriteTree(&b)
	return b.String()
}

func TestRenderGolden(t *testing.T) {
	for _, tree := range renderTrees {
		t.Run(tree, func(t *testing.T) {
			topo, err := Discover(filepath.Join("testdata", tree))
			if err != nil {
				t.Fatal(err)
			}
			got := render(topo)
			file := filepath.Join("testdata", tree+".golden")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (go test ./numa -run TestRenderGolden -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (rerun with -update if the change is meant):\n%s", file, lineDiff(string(want), got))
			}
			if render(topo) != got {
				t.Error("a second rendering differs from the first")
			}
		})
	}
}

// lineDiff shows the first lines where want and got differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n want " + strconv.Quote(a) + "\n  got " + strconv.Quote(b) + "\nfull output:\n" + got
		}
	}
	return ""
}

// The golden files spell out what matters; these check it on every
// tree, so that a careless -update cannot bless a broken rendering.
func TestRenderInvariants(t *testing.T) {
	pu := regexp.MustCompile(`PU L#(\d+) \(P#(\d+)(, not in cpuset)?\)`)
	numaNode := regexp.MustCompile(`NUMANode L#(\d+) \(P#(\d+)[ ,)]`)
	for _, tree := range renderTrees {
		t.Run(tree, func(t *testing.T) {
			topo, err := Discover(filepath.Join("testdata", tree))
			if err != nil {
				t.Fatal(err)
			}
			var hw, tr strings.Builder
			topo.WriteHardware(&hw)
			topo.WriteTree(&tr)
			for _, out := range []string{hw.String(), tr.String()} {
				if !strings.HasSuffix(out, "\n") {
					t.Errorf("output does not end in a newline: %q", out)
				}
				for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
					if line == "" || strings.TrimRight(line, " ") != line {
						t.Errorf("blank line or trailing blanks: %q", line)
					}
				}
			}

			// numactl --hardware: one cpus line per node, with its CPUs.
			if want := "available: " + strconv.Itoa(len(topo.Nodes)) + " nodes ("; !strings.HasPrefix(hw.String(), want) {
				t.Errorf("WriteHardware does not start with %q:\n%s", want, hw.String())
			}
			for _, n := range topo.Nodes {
				line := "node " + strconv.Itoa(n.ID) + " cpus:"
				for _, c := range n.CPUs {
					line += " " + strconv.Itoa(c)
				}
				if !strings.Contains(hw.String(), line+"\n") {
					t.Errorf("WriteHardware lacks %q:\n%s", line, hw.String())
				}
			}

			// lstopo: every online CPU is one PU, numbered L#0, L#1, ... in
			// order, and marked exactly when outside the cpuset.
			m := pu.FindAllStringSubmatch(tr.String(), -1)
			var ids []int
			for i, s := range m {
				if s[1] != strconv.Itoa(i) {
					t.Errorf("PU %d is numbered L#%s", i, s[1])
				}
				id, _ := strconv.Atoi(s[2])
				ids = append(ids, id)
				_, in := slices.BinarySearch(topo.Cpuset, id)
				if want := topo.Cpuset != nil && !in; (s[3] != "") != want {
					t.Errorf("PU P#%d: marked %q, want marked %v", id, s[3], want)
				}
			}
			slices.Sort(ids)
			if !slices.Equal(ids, topo.Online) {
				t.Errorf("PUs are CPUs %v, want the online CPUs %v", ids, topo.Online)
			}
			// Every node appears once, L# its index.
			nm := numaNode.FindAllStringSubmatch(tr.String(), -1)
			if len(nm) != len(topo.Nodes) {
				t.Errorf("%d NUMANode lines, want %d", len(nm), len(topo.Nodes))
			}
			for _, s := range nm {
				l, _ := strconv.Atoi(s[1])
				if l >= len(topo.Nodes) || strconv.Itoa(topo.Nodes[l].ID) != s[2] {
					t.Errorf("NUMANode L#%s has P#%s", s[1], s[2])
				}
			}
			if topo.Offline != nil && !strings.HasSuffix(tr.String(), "  Offline CPUs: "+FormatCPUList(topo.Offline)+"\n") {
				t.Errorf("offline CPUs %v not listed at the end:\n%s", topo.Offline, tr.String())
			}
			if topo.Offline == nil && strings.Contains(tr.String(), "Offline") {
				t.Errorf("offline CPUs listed where there are none:\n%s", tr.String())
			}
		})
	}
}

// TestRenderTreeShapes checks hand-made topologies the fake trees do
// not cover.
func TestRenderTreeShapes(t *testing.T) {
	cpu := func(id, core, socket, node int) CPU {
		return CPU{ID: id, Core: core, Socket: socket, Node: node, Siblings: []int{id}}
	}
	cases := []struct {
		name         string
		topo         *Topology
		tree, hw     string
		treeContains []string
	}{{
		// One node over two sockets: the node hangs off the machine.
		name: "one node, two sockets",
		topo: &Topology{
			Online:  []int{0, 1},
			CPUs:    []CPU{cpu(0, 0, 0, 0), cpu(1, 0, 1, 0)},
			Nodes:   []Node{{ID: 0, CPUs: []int{0, 1}, MemTotal: 3 << 30, MemFree: 1 << 30}},
			Sockets: []Socket{{ID: 0, CPUs: []int{0}, Nodes: []int{0}, Cores: 1}, {ID: 1, CPUs: []int{1}, Nodes: []int{0}, Cores: 1}},
		},
		tree: "Machine (3072MB total)\n" +
			"  NUMANode L#0 (P#0 3072MB)\n" +
			"  Package L#0 + Core L#0 + PU L#0 (P#0)\n" +
			"  Package L#1 + Core L#1 + PU L#1 (P#1)\n",
		hw: "available: 1 nodes (0)\n" +
			"node 0 cpus: 0 1\n" +
			"node 0 size: 3072 MB\n" +
			"node 0 free: 1024 MB\n" +
			"node distances:\n" +
			"No distance information available.\n",
	}, {
		// A node over two of three sockets gets a group holding them;
		// socket IDs that are not L# are shown; node 10's distances are
		// partly unknown.
		name: "node over two sockets",
		topo: &Topology{
			Online: []int{0, 1, 2},
			CPUs:   []CPU{cpu(0, 0, 3, 0), cpu(1, 0, 5, 0), cpu(2, 0, 7, 10)},
			Nodes: []Node{
				{ID: 0, CPUs: []int{0, 1}, Distances: []int{10, 20}},
				{ID: 10, CPUs: []int{2}, MemTotal: 5 << 10, MemFree: 5 << 10, Distances: []int{20}},
			},
			Sockets: []Socket{
				{ID: 3, CPUs: []int{0}, Nodes: []int{0}, Cores: 1},
				{ID: 5, CPUs: []int{1}, Nodes: []int{0}, Cores: 1},
				{ID: 7, CPUs: []int{2}, Nodes: []int{10}, Cores: 1},
			},
		},
		tree: "Machine (5120B total)\n" +
			"  Group0 L#0\n" +
			"    NUMANode L#0 (P#0, no memory)\n" +
			"    Package L#0 (P#3) + Core L#0 + PU L#0 (P#0)\n" +
			"    Package L#1 (P#5) + Core L#1 + PU L#1 (P#1)\n" +
			"  Package L#2 (P#7)\n" +
			"    NUMANode L#1 (P#10 5120B)\n" +
			"    Core L#2 + PU L#2 (P#2)\n",
		hw: "available: 2 nodes (0,10)\n" +
			"node 0 cpus: 0 1\n" +
			"node 0 size: 0 MB\n" +
			"node 0 free: 0 MB\n" +
			"node 10 cpus: 2\n" +
			"node 10 size: 0 MB\n" +
			"node 10 free: 0 MB\n" +
			"node distances:\n" +
			"node   0  10\n" +
			"  0:  10  20\n" +
			" 10:  20   -\n",
	}, {
		// An L3 over two packages holds both: objects nest by their
		// CPUs, whatever their kind.
		name: "cache over packages",
		topo: &Topology{
			Online:  []int{0, 1},
			CPUs:    []CPU{cpu(0, 0, 0, 0), cpu(1, 0, 1, 0)},
			Nodes:   []Node{{ID: 0, CPUs: []int{0, 1}}},
			Sockets: []Socket{{ID: 0, CPUs: []int{0}, Nodes: []int{0}, Cores: 1}, {ID: 1, CPUs: []int{1}, Nodes: []int{0}, Cores: 1}},
			Caches:  []Cache{{Level: 3, Type: "Unified", CPUs: []int{0, 1}}},
		},
		tree: "Machine\n" +
			"  NUMANode L#0 (P#0, no memory)\n" +
			"  L3 L#0\n" +
			"    Package L#0 + Core L#0 + PU L#0 (P#0)\n" +
			"    Package L#1 + Core L#1 + PU L#1 (P#1)\n",
	}, {
		// Wide distances widen the columns.
		name: "wide distances",
		topo: &Topology{
			Online:  []int{0},
			CPUs:    []CPU{cpu(0, 0, 0, 0)},
			Nodes:   []Node{{ID: 0, CPUs: []int{0}, Distances: []int{10, 1000}}, {ID: 12345, CPUs: []int{}, Distances: []int{1000, 10}}},
			Sockets: []Socket{{ID: 0, CPUs: []int{0}, Nodes: []int{0}, Cores: 1}},
		},
		hw: "available: 2 nodes (0,12345)\n" +
			"node 0 cpus: 0\n" +
			"node 0 size: 0 MB\n" +
			"node 0 free: 0 MB\n" +
			"node 12345 cpus:\n" +
			"node 12345 size: 0 MB\n" +
			"node 12345 free: 0 MB\n" +
			"node distances:\n" +
			"node       0 12345\n" +
			"    0:    10  1000\n" +
			"12345:  1000    10\n",
		treeContains: []string{"  NUMANode L#1 (P#12345, no memory, no CPUs)\n", "  Package L#0\n    NUMANode L#0 (P#0, no memory)\n"},
	}, {
		name: "empty",
		topo: &Topology{},
		tree: "Machine\n",
		hw:   "available: 0 nodes\n",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tr, hw strings.Builder
			c.topo.WriteTree(&tr)
			c.topo.WriteHardware(&hw)
			if c.tree != "" && tr.String() != c.tree {
				t.Errorf("WriteTree:\n%s\nwant:\n%s", tr.String(), c.tree)
			}
			for _, s := range c.treeContains {
				if !strings.Contains(tr.String(), s) {
					t.Errorf("WriteTree lacks %q:\n%s", s, tr.String())
				}
			}
			if c.hw != "" && hw.String() != c.hw {
				t.Errorf("WriteHardware:\n%s\nwant:\n%s", hw.String(), c.hw)
			}
		})
	}
}

func TestRenderNil(t *testing.T) {
	var topo *Topology
	var b strings.Builder
	topo.WriteHardware(&b)
	topo.WriteTree(&b)
	if b.Len() != 0 {
		t.Errorf("a nil topology wrote %q", b.String())
	}
}

func TestLstopoSize(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0B"}, {10239, "10239B"}, {10 << 10, "10KB"}, {32 << 10, "32KB"}, {1 << 20, "1024KB"},
		{10 << 20, "10MB"}, {16 << 20, "16MB"}, {8000 << 20, "8000MB"}, {10 << 30, "10GB"}, {65536000 << 10, "62GB"},
	} {
		if got := lstopoSize(c.n); got != c.want {
			t.Errorf("lstopoSize(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
