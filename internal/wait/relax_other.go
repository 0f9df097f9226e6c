//go:build !amd64

package wait

// Relax is a no-op where no pause instruction is wired up.
func Relax() {}
