package env

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"
)

// mapenv returns a getenv over m.
func mapenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func wantDefaults() Config {
	return Config{
		SymmetricSize:     512 << 20,
		Transport:         TransportAuto,
		WaitSleep:         10 * time.Millisecond,
		BarrierAlgorithm:  "auto",
		ReduceAlgorithm:   "auto",
		BcastAlgorithm:    "auto",
		FCollectAlgorithm: "auto",
		NUMACollectives:   "auto",
		HeapPolicy:        "local",
		PMI:               "auto",
		Host:              "auto",
		Internode:         "tcp",
		InternodeIface:    "auto",
		WaitFence:         true,
		InternodePoll:     true,
		InternodeHold:     true,
		InternodeRDMA:     true,
		InternodeRDMAMin:  8 << 10,
		VerbsDevice:       "auto",
		TaskSteal:         true,
		CopyAdapt:         true,
		CopyShare:         64 << 10,
	}
}

func TestDefaults(t *testing.T) {
	c, err := Load(mapenv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := wantDefaults(); c != want {
		t.Errorf("Load(empty) = %+v; want %+v", c, want)
	}
	if d := Default(); d != c {
		t.Errorf("Default() = %+v; want %+v", d, c)
	}
	// Blank is unset.
	blank := map[string]string{}
	for _, k := range Knobs() {
		blank[k.Name] = " \t"
	}
	if c, err := Load(mapenv(blank)); err != nil || c != wantDefaults() {
		t.Errorf("Load(all blank) = %+v, %v; want the defaults", c, err)
	}
}

func TestKnobs(t *testing.T) {
	ks := Knobs()
	seen := map[string]bool{}
	types := map[string]bool{TypeSize: true, TypeBool: true, TypeInt: true, TypeEnum: true, TypeDuration: true, TypeString: true}
	for _, k := range ks {
		if seen[k.Name] {
			t.Errorf("knob %s declared twice", k.Name)
		}
		seen[k.Name] = true
		if !strings.HasPrefix(k.Name, "SHMEM_") && !strings.HasPrefix(k.Name, "GOSHMEM_") {
			t.Errorf("knob %s: name lacks the SHMEM_ or GOSHMEM_ prefix", k.Name)
		}
		if !types[k.Type] {
			t.Errorf("knob %s: unknown type %q", k.Name, k.Type)
		}
		if k.Default == "" || k.Help == "" {
			t.Errorf("knob %s: empty default or help", k.Name)
		}
		if (k.Type == TypeEnum) != (len(k.Values) > 0) {
			t.Errorf("knob %s: type %s with values %v", k.Name, k.Type, k.Values)
		}
		// The default, given explicitly, is accepted and changes nothing.
		c, err := Load(mapenv(map[string]string{k.Name: k.Default}))
		if err != nil || c != wantDefaults() {
			t.Errorf("knob %s: Load with its default %q = %+v, %v", k.Name, k.Default, c, err)
		}
	}
	for _, name := range []string{VarSymmetricSize, VarDebug, VarInfo, VarVersion, VarHugePages,
		VarHeapPolicy, VarTransport, VarWaitSpin, VarWaitYield, VarWaitSleep} {
		if !seen[name] {
			t.Errorf("knob %s is not declared", name)
		}
	}
	// Fresh copies: changing one does not change the next.
	ks[0].Name = "changed"
	for i := range ks {
		if ks[i].Values != nil {
			ks[i].Values[0] = "changed"
		}
	}
	again := Knobs()
	if again[0].Name == "changed" {
		t.Error("Knobs returned shared storage (Name)")
	}
	for _, k := range again {
		for _, v := range k.Values {
			if v == "changed" {
				t.Error("Knobs returned shared storage (Values)")
			}
		}
	}
	if c, err := Load(mapenv(map[string]string{VarTransport: "cma"})); err != nil || c.Transport != TransportCMA {
		t.Errorf("after editing Knobs' result, Load(cma) = %v, %v", c.Transport, err)
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		edit func(*Config)
	}{
		{"size", map[string]string{VarSymmetricSize: "1g"}, func(c *Config) { c.SymmetricSize = 1 << 30 }},
		{"size fraction", map[string]string{VarSymmetricSize: " 1.5k "}, func(c *Config) { c.SymmetricSize = 1536 }},
		{"size bytes", map[string]string{VarSymmetricSize: "1"}, func(c *Config) { c.SymmetricSize = 1 }},
		{"debug", map[string]string{VarDebug: "1"}, func(c *Config) { c.Debug = true }},
		{"debug off", map[string]string{VarDebug: "no"}, func(c *Config) {}},
		{"copy adapt off", map[string]string{VarCopyAdapt: "off"}, func(c *Config) { c.CopyAdapt = false }},
		{"copy share off", map[string]string{VarCopyShare: "off"}, func(c *Config) { c.CopyShare = 0 }},
		{"copy share 0", map[string]string{VarCopyShare: "0"}, func(c *Config) { c.CopyShare = 0 }},
		{"copy share 1m", map[string]string{VarCopyShare: "1m"}, func(c *Config) { c.CopyShare = 1 << 20 }},
		{"copy share least", map[string]string{VarCopyShare: "64k"}, func(c *Config) { c.CopyShare = 64 << 10 }},
		{"info", map[string]string{VarInfo: "yes"}, func(c *Config) { c.Info = true }},
		{"version", map[string]string{VarVersion: "ON"}, func(c *Config) { c.Version = true }},
		{"huge", map[string]string{VarHugePages: "true"}, func(c *Config) { c.HugePages = true }},
		{"heap policy", map[string]string{VarHeapPolicy: "Interleave"}, func(c *Config) { c.HeapPolicy = "interleave" }},
		{"heap policy none", map[string]string{VarHeapPolicy: " none"}, func(c *Config) { c.HeapPolicy = "none" }},
		{"xpmem", map[string]string{VarTransport: "xpmem"}, func(c *Config) { c.Transport = TransportXPMEM }},
		{"CMA", map[string]string{VarTransport: "CMA"}, func(c *Config) { c.Transport = TransportCMA }},
		{"auto", map[string]string{VarTransport: "Auto"}, func(c *Config) {}},
		{"spin", map[string]string{VarWaitSpin: "100"}, func(c *Config) { c.WaitSpin = 100 }},
		{"spin auto", map[string]string{VarWaitSpin: "auto"}, func(c *Config) {}},
		{"spin max", map[string]string{VarWaitSpin: "2147483647"}, func(c *Config) { c.WaitSpin = 1<<31 - 1 }},
		{"yield", map[string]string{VarWaitYield: "7"}, func(c *Config) { c.WaitYield = 7 }},
		{"yield auto", map[string]string{VarWaitYield: "AUTO"}, func(c *Config) {}},
		{"size max", map[string]string{VarSymmetricSize: "256t"}, func(c *Config) { c.SymmetricSize = MaxSymmetricSize }},
		{"size max bytes", map[string]string{VarSymmetricSize: "281474976710656"}, func(c *Config) { c.SymmetricSize = 1 << 48 }},
		{"size max g", map[string]string{VarSymmetricSize: "262144G"}, func(c *Config) { c.SymmetricSize = 1 << 48 }},
		{"size 1", map[string]string{VarSymmetricSize: "1"}, func(c *Config) { c.SymmetricSize = 1 }},
		{"sleep", map[string]string{VarWaitSleep: "200us"}, func(c *Config) { c.WaitSleep = 200 * time.Microsecond }},
		{"sleep max", map[string]string{VarWaitSleep: "500ms"}, func(c *Config) { c.WaitSleep = 500 * time.Millisecond }},
		{"sleep min", map[string]string{VarWaitSleep: "1ns"}, func(c *Config) { c.WaitSleep = 1 }},
		{"sleep s", map[string]string{VarWaitSleep: "0.25s"}, func(c *Config) { c.WaitSleep = 250 * time.Millisecond }},
		{"unrelated", map[string]string{"SHMEM_SYMETRIC_SIZE": "1x"}, func(c *Config) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := wantDefaults()
			tt.edit(&want)
			got, err := Load(mapenv(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("Load(%v) = %+v; want %+v", tt.env, got, want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, value string
		want        []string // substrings of the message
	}{
		{VarSymmetricSize, "12x", []string{`goshmem: unknown suffix "x" in SHMEM_SYMMETRIC_SIZE="12x"; use k, m, g or t`, "default, 512M"}},
		{VarSymmetricSize, "0", []string{"zero size", "default, 512M"}},
		{VarSymmetricSize, "-1g", []string{"negative size"}},
		{VarSymmetricSize, "1e9", []string{`unknown suffix "e9"`}},
		// The parser's own maximum and everything else above
		// MaxSymmetricSize: refused here, with the variable named, not
		// garbled later by the runtime's arithmetic.
		{VarSymmetricSize, "9223372036854775807", []string{`size too large in SHMEM_SYMMETRIC_SIZE="9223372036854775807"; use at most 256t (281474976710656 bytes)`, "default, 512M"}},
		{VarSymmetricSize, "8388607t", []string{"size too large", "at most 256t"}},
		{VarSymmetricSize, "256.0001t", []string{"size too large", "at most 256t"}},
		{VarSymmetricSize, "281474976710657", []string{"size too large", "at most 256t"}},
		{VarSymmetricSize, "262145g", []string{"size too large", "at most 256t"}},
		// Beyond what the parser holds: still the knob's own limit, not
		// the parser's (a user who follows the advice must succeed).
		{VarSymmetricSize, "9223372036854775808", []string{"size too large", "at most 256t"}},
		{VarSymmetricSize, "9999999999999t", []string{"size too large", "at most 256t"}},
		{VarCopyShare, "9999999999999t", []string{"size too large", "from 64k to 1t"}},
		{VarHugePages, "maybe", []string{`SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES="maybe"`, "not a boolean", "yes/no", "default, off"}},
		{VarHugePages, "2", []string{"SHMEM_SYMMETRIC_HEAP_USE_HUGE_PAGES"}},
		{VarTransport, "shm", []string{`unknown value in SHMEM_TRANSPORT="shm"; use one of auto, xpmem, cma`, "default, auto"}},
		{VarHeapPolicy, "bind", []string{`unknown value in SHMEM_HEAP_POLICY="bind"; use one of local, interleave, none`, "default, local"}},
		{VarWaitSpin, "-5", []string{"negative number", "SHMEM_WAIT_SPIN", "auto"}},
		{VarWaitSpin, "lots", []string{"not a whole number"}},
		{VarWaitSpin, "1.5", []string{"not a whole number"}},
		{VarWaitYield, "2147483648", []string{"too large a number"}},
		{VarWaitYield, "99999999999999999999", []string{"too large a number"}},
		{VarWaitSleep, "10", []string{"duration without a unit", "e.g. 10ms", "default, 10ms"}},
		{VarWaitSleep, "0", []string{"duration out of range", "more than 0s and at most 500ms"}},
		{VarWaitSleep, "0s", []string{"duration out of range"}},
		{VarWaitSleep, "-1ms", []string{"duration out of range"}},
		{VarWaitSleep, "501ms", []string{"duration out of range"}},
		{VarWaitSleep, "1h", []string{"duration out of range"}},
		{VarWaitSleep, "soon", []string{"not a duration"}},
		{VarCopyShare, "1", []string{"size out of range", "SHMEM_COPY_SHARE", "from 64k to 1t"}},
		{VarCopyShare, "on", []string{`not a number in SHMEM_COPY_SHARE="on"; give off, or a size from 64k to 1t`}},
		{VarCopyShare, "63k", []string{"size out of range"}},
		{VarCopyShare, "2t", []string{"size out of range"}},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			c, err := Load(mapenv(map[string]string{tt.name: tt.value}))
			if err == nil {
				t.Fatalf("Load(%s=%q) = %+v, nil; want an error", tt.name, tt.value, c)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			var e *Error
			if !errors.As(err, &e) || e.Name != tt.name || e.Value != tt.value || e.Default == "" || e.Accept == "" {
				t.Errorf("error %#v: want an *Error with name, value, default and advice", err)
			}
			if c != wantDefaults() {
				t.Errorf("Load with a bad value returned %+v; want the defaults", c)
			}
		})
	}
}

// TestDeprecatedNames: OpenSHMEM 1.4 deprecated the SMA_ names of the
// specification's four variables in favour of SHMEM_ ones. A
// deprecated name is read when the SHMEM_ variable is unset or blank,
// the SHMEM_ one wins when both are set, an invalid value names the
// variable it came from, and the other knobs have no SMA_ name.
func TestDeprecatedNames(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		edit func(*Config)
	}{
		{"SMA size", map[string]string{"SMA_SYMMETRIC_SIZE": "1g"}, func(c *Config) { c.SymmetricSize = 1 << 30 }},
		{"SMA debug", map[string]string{"SMA_DEBUG": "1"}, func(c *Config) { c.Debug = true }},
		{"SMA info", map[string]string{"SMA_INFO": "yes"}, func(c *Config) { c.Info = true }},
		{"SMA version", map[string]string{"SMA_VERSION": "on"}, func(c *Config) { c.Version = true }},
		{"SHMEM wins", map[string]string{"SMA_SYMMETRIC_SIZE": "1g", VarSymmetricSize: "2m"}, func(c *Config) { c.SymmetricSize = 2 << 20 }},
		{"SHMEM off wins", map[string]string{"SMA_DEBUG": "1", VarDebug: "0"}, func(c *Config) {}},
		{"SHMEM blank", map[string]string{"SMA_SYMMETRIC_SIZE": "1g", VarSymmetricSize: "  "}, func(c *Config) { c.SymmetricSize = 1 << 30 }},
		{"SMA blank", map[string]string{"SMA_SYMMETRIC_SIZE": " "}, func(c *Config) {}},
		{"no SMA_ for others", map[string]string{"SMA_TRANSPORT": "cma", "SMA_HEAP_POLICY": "none"}, func(c *Config) {}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := wantDefaults()
			tt.edit(&want)
			got, err := Load(mapenv(tt.env))
			if err != nil || got != want {
				t.Errorf("Load(%v) = %+v, %v; want %+v", tt.env, got, err, want)
			}
		})
	}
	_, err := Load(mapenv(map[string]string{"SMA_SYMMETRIC_SIZE": "12x"}))
	var e *Error
	if !errors.As(err, &e) || e.Name != "SMA_SYMMETRIC_SIZE" || e.Value != "12x" || !strings.Contains(err.Error(), `SMA_SYMMETRIC_SIZE="12x"`) {
		t.Errorf("Load(SMA_SYMMETRIC_SIZE=12x): %v; want an *Error naming SMA_SYMMETRIC_SIZE", err)
	}
	if _, err := Load(mapenv(map[string]string{"SMA_SYMMETRIC_SIZE": "12x", VarSymmetricSize: "1m"})); err != nil {
		t.Errorf("a bad SMA_SYMMETRIC_SIZE under a good SHMEM_SYMMETRIC_SIZE: %v; want it unread", err)
	}
	if c, err := LoadOnly(mapenv(map[string]string{"SMA_SYMMETRIC_SIZE": "1g", "SMA_DEBUG": "1"}), VarSymmetricSize); err != nil || c.SymmetricSize != 1<<30 || c.Debug {
		t.Errorf("LoadOnly(SHMEM_SYMMETRIC_SIZE) = size %d, debug %v, %v; want the SMA_ size only", c.SymmetricSize, c.Debug, err)
	}
	deprecated := map[string]string{}
	for _, k := range Knobs() {
		if k.Deprecated != "" {
			deprecated[k.Name] = k.Deprecated
		}
	}
	wantNames := map[string]string{VarSymmetricSize: "SMA_SYMMETRIC_SIZE", VarDebug: "SMA_DEBUG", VarInfo: "SMA_INFO", VarVersion: "SMA_VERSION"}
	if !maps.Equal(deprecated, wantNames) {
		t.Errorf("deprecated names %v; want %v", deprecated, wantNames)
	}
	var b strings.Builder
	Print(&b, mapenv(map[string]string{"SMA_SYMMETRIC_SIZE": "1g"}))
	if out := b.String(); !strings.Contains(out, "SHMEM_SYMMETRIC_SIZE") || !strings.Contains(out, "= 1g (from SMA_SYMMETRIC_SIZE)") ||
		!strings.Contains(out, "Also read from SMA_SYMMETRIC_SIZE") {
		t.Errorf("Print with SMA_SYMMETRIC_SIZE=1g does not show where the value came from:\n%s", out)
	}
}

func TestLoadJoinsErrors(t *testing.T) {
	c, err := Load(mapenv(map[string]string{
		VarSymmetricSize: "lots",
		VarDebug:         "1",
		VarTransport:     "tcp",
		VarWaitSleep:     "1s",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error %T is not a joined error", err)
	}
	var names []string
	for _, e := range j.Unwrap() {
		var ke *Error
		if !errors.As(e, &ke) {
			t.Fatalf("%v is not an *Error", e)
		}
		names = append(names, ke.Name)
	}
	if want := []string{VarSymmetricSize, VarTransport, VarWaitSleep}; !reflect.DeepEqual(names, want) {
		t.Errorf("errors name %v; want %v", names, want)
	}
	// The good value still counts.
	if !c.Debug || c.SymmetricSize != 512<<20 {
		t.Errorf("Config = %+v; want Debug and the default size", c)
	}
}

func TestUnrecognized(t *testing.T) {
	tests := []struct {
		environ []string
		want    []string
	}{
		{nil, nil},
		{[]string{"HOME=/root", "SHMEM_SYMMETRIC_SIZE=1g", "GOSHMEM_NPES=4"}, nil},
		{[]string{"SHMEM_SYMETRIC_SIZE=1g", "SHMEM_DEBUG=1", "SHMEM_OFI_PROVIDER=tcp", "SHMEM_SYMETRIC_SIZE=2g", "XSHMEM_A=1"},
			[]string{"SHMEM_OFI_PROVIDER", "SHMEM_SYMETRIC_SIZE"}},
		{[]string{"SHMEM_NOVALUE"}, []string{"SHMEM_NOVALUE"}},
	}
	for _, tt := range tests {
		if got := Unrecognized(tt.environ); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Unrecognized(%q) = %q; want %q", tt.environ, got, tt.want)
		}
	}
}

func TestPrint(t *testing.T) {
	var b strings.Builder
	Print(&b, mapenv(map[string]string{VarSymmetricSize: "1g", VarWaitSleep: "2s"}))
	out := b.String()
	for _, k := range Knobs() {
		if !strings.Contains(out, k.Name) {
			t.Errorf("Print output lacks %s", k.Name)
		}
		if !strings.Contains(out, "default "+k.Default+"]") {
			t.Errorf("Print output lacks the default of %s", k.Name)
		}
	}
	for _, want := range []string{
		"SHMEM_SYMMETRIC_SIZE                = 1g  [size, default 512M]\n",
		"SHMEM_DEBUG                         = (default)  [bool, default off]\n",
		"[enum auto|xpmem|cma, default auto]",
		"SHMEM_WAIT_SLEEP                    = 2s  [duration, default 10ms]\n    INVALID (start-up fails until it is fixed or unset): duration out of\n    range; use a duration",
		"\n    Bytes of symmetric heap per PE",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Print output lacks %q:\n%s", want, out)
		}
	}
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		help := strings.HasPrefix(line, "    ")
		if help && len(line) > helpWidth && len(strings.Fields(line)) > 1 {
			t.Errorf("help line %d is %d columns wide: %q", i+1, len(line), line)
		}
	}
}

func TestWrap(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"one two", "    one two\n"},
		{strings.Repeat("abcd ", 20), "    " + strings.TrimSpace(strings.Repeat("abcd ", 14)) + "\n    " + strings.TrimSpace(strings.Repeat("abcd ", 6)) + "\n"},
		{strings.Repeat("x", 100) + " y", "    " + strings.Repeat("x", 100) + "\n    y\n"},
	}
	for _, tt := range tests {
		var b strings.Builder
		wrap(&b, tt.in)
		if b.String() != tt.want {
			t.Errorf("wrap(%q) = %q; want %q", tt.in, b.String(), tt.want)
		}
	}
}

// FuzzLoad sets one knob to an arbitrary value: Load must not panic,
// must either accept the value or name the variable in its error, and
// an accepted value must be in range.
func FuzzLoad(f *testing.F) {
	ks := Knobs()
	for i, k := range ks {
		f.Add(uint8(i), k.Default)
		f.Add(uint8(i), "x")
	}
	f.Add(uint8(0), "3.1m")
	f.Add(uint8(8), "500ms")
	f.Fuzz(func(t *testing.T, i uint8, v string) {
		k := ks[int(i)%len(ks)]
		c, err := Load(mapenv(map[string]string{k.Name: v}))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Name != k.Name || e.Value != v || e.Accept == "" {
				t.Fatalf("Load(%s=%q) error %#v lacks name, value or advice", k.Name, v, err)
			}
			if c != wantDefaults() {
				t.Fatalf("Load(%s=%q) failed but returned %+v", k.Name, v, c)
			}
			return
		}
		if c.SymmetricSize <= 0 || c.SymmetricSize > MaxSymmetricSize || c.WaitSpin < 0 || c.WaitYield < 0 ||
			c.WaitSleep <= 0 || c.WaitSleep > MaxWaitSleep {
			t.Fatalf("Load(%s=%q) = %+v out of range", k.Name, v, c)
		}
		switch c.Transport {
		case TransportAuto, TransportXPMEM, TransportCMA:
		default:
			t.Fatalf("Load(%s=%q): transport %q", k.Name, v, c.Transport)
		}
		switch c.HeapPolicy {
		case "local", "interleave", "none":
		default:
			t.Fatalf("Load(%s=%q): heap policy %q", k.Name, v, c.HeapPolicy)
		}
		var b strings.Builder
		Print(&b, mapenv(map[string]string{k.Name: v}))
		if strings.Contains(b.String(), "INVALID") {
			t.Fatalf("Load accepts %s=%q but Print calls it invalid", k.Name, v)
		}
	})
}

// TestAnyValueKnobs: SHMEM_VERSION, SHMEM_INFO and SHMEM_DEBUG take
// "Any" value (OpenSHMEM 1.5, Environment Variables): every value turns
// them on but the usual false words, and none is an error.
func TestAnyValueKnobs(t *testing.T) {
	for _, name := range []string{VarVersion, VarInfo, VarDebug} {
		for _, c := range []struct {
			v    string
			want bool
		}{{"1", true}, {"verbose", true}, {"2", true}, {"any", true}, {"yes", true}, {"0", false}, {"off", false}, {"no", false}, {"false", false}, {"", false}} {
			cfg, err := Load(func(k string) string {
				if k == name {
					return c.v
				}
				return ""
			})
			got := cfg.Version
			switch name {
			case VarInfo:
				got = cfg.Info
			case VarDebug:
				got = cfg.Debug
			}
			if err != nil || got != c.want {
				t.Errorf("%s=%q: %v, %v; want %v, nil", name, c.v, got, err, c.want)
			}
		}
	}
}

// TestRDMAMinZero: SHMEM_INTERNODE_RDMA_MIN=0 is valid (its help: "0:
// every put"), where SHMEM_SYMMETRIC_SIZE=0 is not; a size knob's
// advice names its own default.
func TestRDMAMinZero(t *testing.T) {
	cfg, err := Load(func(k string) string {
		if k == VarInternodeRDMAMin {
			return "0"
		}
		return ""
	})
	if err != nil || cfg.InternodeRDMAMin != 0 {
		t.Errorf("SHMEM_INTERNODE_RDMA_MIN=0: %d, %v; want 0, nil", cfg.InternodeRDMAMin, err)
	}
	_, err = Load(func(k string) string {
		if k == VarInternodeRDMAMin {
			return "2g"
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "at most 1g") || !strings.Contains(err.Error(), "e.g. 8k") {
		t.Errorf("SHMEM_INTERNODE_RDMA_MIN=2g: %v; want an error giving 1g as the limit and 8k as the example", err)
	}
	if _, err = Load(func(k string) string {
		if k == VarSymmetricSize {
			return "0"
		}
		return ""
	}); err == nil || !strings.Contains(err.Error(), "zero size") {
		t.Errorf("SHMEM_SYMMETRIC_SIZE=0: %v; want a zero-size error", err)
	}
}
