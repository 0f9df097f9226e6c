package verbs

import (
	"errors"
	"strings"
	"testing"
)

func TestEndpointRoundTrip(t *testing.T) {
	for _, e := range []Endpoint{
		{},
		{QPN: 0xffffff, PSN: 0xabcdef, LID: 0xffff, GID: [16]byte{0xfe, 0x80, 15: 1}},
		{QPN: 17, PSN: 1, GID: [16]byte{10: 0xff, 11: 0xff, 12: 192, 13: 0, 14: 2, 15: 1}},
	} {
		s := e.String()
		if len(s) > 51 || strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
			t.Errorf("%+v encodes as %q: want at most 51 printable bytes", e, s)
		}
		got, err := ParseEndpoint(s)
		if err != nil || got != e {
			t.Errorf("ParseEndpoint(%q) = %+v, %v; want %+v", s, got, err, e)
		}
	}
}

func TestParseEndpointRejects(t *testing.T) {
	for _, s := range []string{"", "1.2.3", "1.2.3.4.5", "1000000.1.1." + strings.Repeat("0", 32),
		"1.1000000.1." + strings.Repeat("0", 32), "1.1.10000." + strings.Repeat("0", 32),
		"1.1.1." + strings.Repeat("0", 30), "1.1.1." + strings.Repeat("g", 32), "x.1.1." + strings.Repeat("0", 32)} {
		if e, err := ParseEndpoint(s); err == nil {
			t.Errorf("ParseEndpoint(%q) = %+v; want an error", s, e)
		}
	}
}

func FuzzParseEndpoint(f *testing.F) {
	f.Add("11.abc.0.fe800000000000000000000000000001")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEndpoint(s)
		if err != nil {
			return
		}
		if e.QPN >= 1<<24 || e.PSN >= 1<<24 {
			t.Fatalf("%q: %+v has fields beyond 24 bits", s, e)
		}
		if back, err := ParseEndpoint(e.String()); err != nil || back != e {
			t.Fatalf("%q: %+v does not round-trip: %+v, %v", s, e, back, err)
		}
	})
}

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ConfigFromEnv(env(map[string]string{"SHMEM_VERBS_DEVICE": " rxe0 ", "SHMEM_VERBS_PORT": "2", "SHMEM_VERBS_GID_INDEX": "3"}))
	if err != nil || c != (Config{Device: "rxe0", Port: 2, GIDIndex: 3}) {
		t.Errorf("got %+v, %v", c, err)
	}
	if c, err := ConfigFromEnv(env(nil)); err != nil || c != (Config{}) {
		t.Errorf("empty: %+v, %v", c, err)
	}
	if c, err := ConfigFromEnv(env(map[string]string{"SHMEM_VERBS_DEVICE": "auto", "SHMEM_SYMMETRIC_SIZE": "lots"})); err != nil || c != (Config{}) {
		t.Errorf("auto, with another knob bad: %+v, %v; want the first device and no error (the other knob is not verbs')", c, err)
	}
	for _, kv := range [][2]string{{"SHMEM_VERBS_PORT", "256"}, {"SHMEM_VERBS_PORT", "-1"}, {"SHMEM_VERBS_PORT", "one"}, {"SHMEM_VERBS_GID_INDEX", "65536"}} {
		_, err := ConfigFromEnv(env(map[string]string{kv[0]: kv[1]}))
		if err == nil || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("%s=%s: err %v; want one naming the variable", kv[0], kv[1], err)
		}
	}
}

func TestNoDeviceMessage(t *testing.T) {
	err := noDevice(Config{Device: "mlx5_9"}, []string{"rxe0"})
	for _, want := range []string{`"mlx5_9"`, "SHMEM_VERBS_DEVICE", "rxe0", "SHMEM_INTERNODE=tcp"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: missing %q", err, want)
		}
	}
	if !errors.Is(err, ErrNoDevice) {
		t.Errorf("%v does not wrap ErrNoDevice", err)
	}
	if err := noDevice(Config{}, nil); !strings.Contains(err.Error(), "no devices") {
		t.Errorf("no devices: %v", err)
	}
}
