//go:build !amd64

package numa

// hardwareCacheLine returns 0: outside amd64 the size comes from sysfs.
func hardwareCacheLine() int { return 0 }
