package env

import "testing"

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{
		{0, "0 bytes"},
		{1023, "1023 bytes"},
		{1024, "1024 bytes (1 KiB)"},
		{1536, "1536 bytes (1.5 KiB)"},
		{512 << 20, "536870912 bytes (512 MiB)"},
		{3 << 29, "1610612736 bytes (1.5 GiB)"},
		{8 << 40, "8796093022208 bytes (8 TiB)"},
		{1048583, "1048583 bytes (1 MiB)"},
		{1<<64 - 1, "18446744073709551615 bytes (16 EiB)"},
	} {
		if got := FormatSize(tc.n); got != tc.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
