package numa

import (
	"slices"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
	}{
		{"", []int{}},
		{"\n", []int{}},
		{"  \t", []int{}},
		{"0", []int{0}},
		{"0\n", []int{0}},
		{"0-3", []int{0, 1, 2, 3}},
		{"0-3,8,10-11", []int{0, 1, 2, 3, 8, 10, 11}},
		{"0-3,8,10-11\n", []int{0, 1, 2, 3, 8, 10, 11}},
		{" 0-1 , 4 ", []int{0, 1, 4}},
		{"5-5", []int{5}},
		{"3,1,2", []int{1, 2, 3}},
		{"1,1,0-2", []int{0, 1, 2}},
		{"0-7:2", []int{0, 2, 4, 6}},
		{"1-7:2", []int{1, 3, 5, 7}},
		{"0-8:4", []int{0, 4, 8}},
		{"0-3:1", []int{0, 1, 2, 3}},
		{"0-3:10", []int{0}},
		{"0-15:2/4", []int{0, 1, 4, 5, 8, 9, 12, 13}},
		{"0-9:2/4", []int{0, 1, 4, 5, 8, 9}},
		{"0-8:2/4", []int{0, 1, 4, 5, 8}},
		{"0-3:4/4", []int{0, 1, 2, 3}},
		{"2-5:1/2", []int{2, 4}},
		{"007", []int{7}},
		{"1048576", []int{MaxCPU}},
		{"1048575-1048576", []int{MaxCPU - 1, MaxCPU}},
		{"63-65", []int{63, 64, 65}},
	}
	for _, tt := range tests {
		got, err := ParseCPUList(tt.in)
		if err != nil || !slices.Equal(got, tt.want) || got == nil {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseCPUListErrors(t *testing.T) {
	tests := []struct {
		in, want string // want: substring of the error
	}{
		{",", "empty item"},
		{"0,", "empty item"},
		{",0", "empty item"},
		{"0,,1", "empty item"},
		{"a", `"a" is not a CPU number`},
		{"0x1", `"0x1" is not a CPU number`},
		{"-1", `"" is not a CPU number`},
		{"+1", `"+1" is not a CPU number`},
		{"1-", `"" is not a CPU number`},
		{"1-2-3", `"2-3" is not a CPU number`},
		{"1 - 3", `"1 " is not a CPU number`},
		{"3-1", `descending range "3-1" (write 1-3)`},
		{"1048577", "above 1048576"},
		{"0-1048577", "above 1048576"},
		{"99999999999999999999999", "above 1048576"},
		{"0-7:0", "stride of 0"},
		{"0-7:", `"" is not a stride`},
		{"0-7:x", `"x" is not a stride`},
		{"0-7:-1", `"-1" is not a stride`},
		{"0-7:9999999", "stride \"9999999\" is above"},
		{"4:2", "stride without a range"},
		{"0-7:2/", `"" is not a group size`},
		{"0-7:0/4", "used count of 0"},
		{"0-7:2/0", "group size of 0"},
		{"0-7:5/4", "uses more CPUs than it has"},
		{"0-7:1/2/3", `"2/3" is not a group size`},
		{"0-7:2:2", `"2:2" is not a stride`},
	}
	for _, tt := range tests {
		got, err := ParseCPUList(tt.in)
		if err == nil {
			t.Errorf("ParseCPUList(%q) = %v, nil; want an error", tt.in, got)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.want) {
			t.Errorf("ParseCPUList(%q) error %q does not contain %q", tt.in, msg, tt.want)
		}
		if !strings.HasPrefix(msg, "numa: bad CPU list ") || !strings.Contains(msg, "e.g. 0-3,8,10-11") {
			t.Errorf("ParseCPUList(%q) error %q does not say what to write", tt.in, msg)
		}
	}
}

func TestFormatCPUList(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{}, ""},
		{[]int{0}, "0"},
		{[]int{0, 1}, "0-1"},
		{[]int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"},
		{[]int{11, 10, 8, 3, 2, 1, 0}, "0-3,8,10-11"},
		{[]int{0, 2, 4, 6}, "0,2,4,6"},
		{[]int{5, 5, 5}, "5"},
		{[]int{-1, 0, 1}, "0-1"},
		{[]int{-3, -2}, ""},
		{[]int{MaxCPU}, "1048576"},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		if got := FormatCPUList(in); got != tt.want {
			t.Errorf("FormatCPUList(%v) = %q; want %q", tt.in, got, tt.want)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("FormatCPUList changed its argument to %v", in)
		}
	}
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"", "0", "0-3,8,10-11\n", "0-7:2", "0-15:2/4", "3-1", "1,,2", "1048576", "0-7:0", " 1 , 2 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil {
			return
		}
		for i, c := range cpus {
			if c < 0 || c > MaxCPU || i > 0 && c <= cpus[i-1] {
				t.Fatalf("ParseCPUList(%q) = %v: not ascending in [0, MaxCPU]", s, cpus)
			}
		}
		text := FormatCPUList(cpus)
		again, err := ParseCPUList(text)
		if err != nil || !slices.Equal(again, cpus) {
			t.Fatalf("ParseCPUList(%q) = %v; formatted %q; parsed back %v, %v", s, cpus, text, again, err)
		}
		if FormatCPUList(again) != text {
			t.Fatalf("format of %q is not stable", text)
		}
	})
}
