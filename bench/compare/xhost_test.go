package main

import (
	"slices"
	"strings"
	"testing"
)

func TestRouteIface(t *testing.T) {
	for _, c := range []struct{ route, want string }{
		{"Iface\tDestination\tGateway\tFlags\n" +
			"eth0\t00000000\t010200C0\t0003\n" +
			"eth0\t000200C0\t00000000\t0001\n", "eth0"},
		{"Iface\tDestination\tGateway\tFlags\n" +
			"br0\t000200C0\t00000000\t0001\n" +
			"wlan0\t00000000\t0101A8C0\t0003\n", "wlan0"},
		{"Iface\tDestination\tGateway\tFlags\n" +
			"lo\t0000007F\t00000000\t0001\n", ""},
		{"", ""},
	} {
		if got := routeIface(c.route); got != c.want {
			t.Errorf("routeIface(%q) = %q, want %q", c.route, got, c.want)
		}
	}
}

// TestHydraArgs: one group of ranks per host, each told its host, the
// environment and its own host's additions, separated by ":"; across
// the namespace hosts (ns), the groups placed on h1, h2, ... in rank
// order and no SHMEM_HOST.
func TestHydraArgs(t *testing.T) {
	got := hydraArgs([]int{2, 1}, false, []string{"A=1", "B=x=y"}, map[int][]string{1: {"C=2"}}, "prog", "-i", "5")
	want := strings.Fields("-n 2 -env SHMEM_HOST h0 -env A 1 -env B x=y prog -i 5 : -n 1 -env SHMEM_HOST h1 -env A 1 -env B x=y -env C 2 prog -i 5")
	if !slices.Equal(got, want) {
		t.Errorf("hydraArgs = %q\nwant        %q", got, want)
	}
	got = hydraArgs([]int{2, 1}, true, []string{"A=1"}, map[int][]string{1: {"C=2"}}, "prog", "-i", "5")
	want = strings.Fields("-hosts h1:2,h2:1 -n 2 -env A 1 prog -i 5 : -n 1 -env A 1 -env C 2 prog -i 5")
	if !slices.Equal(got, want) {
		t.Errorf("hydraArgs (ns) = %q\nwant             %q", got, want)
	}
}

func TestHostsFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   bool
		want int
	}{
		{[]string{"-hosts", "2"}, true, 2},
		{[]string{"-hosts", "3", "-iface", "eth0"}, true, 3},
		{[]string{}, true, 0},
		{[]string{"-hosts", "1"}, false, 0},
		{[]string{"-hosts", "-2"}, false, 0},
	} {
		cfg, err := parseFlags(c.args, &strings.Builder{})
		if (err == nil) != c.ok || err == nil && cfg.Hosts != c.want {
			t.Errorf("parseFlags(%q) = %+v, %v; want ok %v, hosts %d", c.args, cfg, err, c.ok, c.want)
		}
	}
}
