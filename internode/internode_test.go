package internode

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// TestHeaderLayout: the encoding is the documented wire layout
// (little-endian, fields at the package comment's offsets).
func TestHeaderLayout(t *testing.T) {
	h := Header{Op: 0x01, Flags: 0x02, Ctx: 0x0403, PE: 0x08070605, Off: 0x100f0e0d0c0b0a09, Len: 0x14131211,
		Seq: 0x18171615, Arg0: 0x201f1e1d1c1b1a19, Arg1: 0x2827262524232221}
	b := make([]byte, HeaderSize)
	h.Encode(b)
	want, _ := hex.DecodeString("0102030405060708" + "090a0b0c0d0e0f10" + "1112131415161718" + "191a1b1c1d1e1f20" + "2122232425262728")
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded %x\nwant    %x", b, want)
	}
	var d Header
	d.Decode(b)
	if d != h {
		t.Fatalf("decoded %+v, want %+v", d, h)
	}
}

func TestOpenChecks(t *testing.T) {
	none := []Backend{}
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Leaders: 1}, "needs a Sink and an Exchange"},
		{Config{Leaders: 2, Ranks: []int{-1, 5}, Sink: nopSink{}, Exchange: nopExchange{}}, "Ranks[0] is -1"},
		{Config{Leaders: 2, Ranks: []int{3, 3}, Sink: nopSink{}, Exchange: nopExchange{}}, "Ranks[1] is 3; ranks are distinct"},
		{Config{Leaders: 2, Ranks: []int{0}, Sink: nopSink{}, Exchange: nopExchange{}}, "1 ranks for 2 leaders"},
	}
	for _, c := range cases {
		if _, err := Open(none, "tcp", c.cfg); err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("Open(%+v): %v, want %q", c.cfg, err, c.want)
		}
	}
	ok := Config{Leaders: 1, Sink: nopSink{}, Exchange: nopExchange{}}
	if _, err := Open([]Backend{{Name: "x"}}, "x", ok); err == nil || !bytes.Contains([]byte(err.Error()), []byte("no Open function")) {
		t.Errorf("Open of a backend without Open: %v, want an error saying so", err)
	}
	defer func() {
		if r := fmt.Sprint(recover()); !strings.Contains(r, "leader 1 out of range [0, 1)") {
			t.Errorf("Config.Rank(1) of 1 leader panicked with %q, want the range", r)
		}
	}()
	ok.Rank(1)
}

type nopSink struct{}

func (nopSink) Buffer(int, *Header) []byte   { return nil }
func (nopSink) Deliver(int, *Header, []byte) {}
func (nopSink) Failed(int, error)            {}

type nopExchange struct{}

func (nopExchange) Put(string, []byte) error        { return nil }
func (nopExchange) Fence() error                    { return nil }
func (nopExchange) Get(int, string) ([]byte, error) { return nil, nil }

func FuzzHeader(f *testing.F) {
	f.Add(make([]byte, HeaderSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < HeaderSize {
			return
		}
		var h Header
		h.Decode(b)
		out := make([]byte, HeaderSize)
		h.Encode(out)
		if !bytes.Equal(out, b[:HeaderSize]) {
			t.Fatalf("decode/encode changed the header: %x -> %x", b[:HeaderSize], out)
		}
	})
}

// TestArena: Hold copies (the caller may change its bytes after), fills
// up to ArenaBytes and refuses past it, and Reset frees everything.
func TestArena(t *testing.T) {
	var a Arena
	src := []byte("payload")
	c, ok := a.Hold(src)
	if !ok || string(c) != "payload" {
		t.Fatalf("Hold = %q, %v", c, ok)
	}
	src[0] = 'X'
	if string(c) != "payload" {
		t.Fatalf("the held copy changed with its source: %q", c)
	}
	if _, ok := a.Hold(make([]byte, ArenaBytes-len(src))); !ok {
		t.Fatal("Hold refused what fits exactly")
	}
	if _, ok := a.Hold([]byte{1}); ok {
		t.Fatal("Hold accepted a byte past ArenaBytes")
	}
	a.Reset()
	d, ok := a.Hold(make([]byte, ArenaBytes))
	if !ok || len(d) != ArenaBytes || cap(d) != ArenaBytes {
		t.Fatalf("after Reset: Hold of ArenaBytes = len %d cap %d, %v", len(d), cap(d), ok)
	}
}
