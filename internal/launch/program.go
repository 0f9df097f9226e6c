package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// resolveProgram returns the executable to run for prog, and a function
// that removes what resolving it created. prog is an executable path, a
// command in $PATH, or a Go main package directory, which is built once
// into a temporary directory.
func resolveProgram(ctx context.Context, prog string) (path string, cleanup func(), err error) {
	noop := func() {}
	if strings.ContainsRune(prog, os.PathSeparator) || prog == "." || prog == ".." {
		fi, err := os.Stat(prog)
		if err != nil {
			return "", noop, fmt.Errorf("program %s: %w", prog, errors.Unwrap(err))
		}
		if fi.IsDir() {
			return buildPackage(ctx, prog)
		}
		if fi.Mode()&0o111 == 0 {
			return "", noop, fmt.Errorf("program %s is not executable; chmod +x it, or give a Go package directory", prog)
		}
		abs, err := filepath.Abs(prog)
		if err != nil {
			return "", noop, err
		}
		return abs, noop, nil
	}
	if path, err := exec.LookPath(prog); err == nil {
		return path, noop, nil
	}
	if fi, err := os.Stat(prog); err == nil && fi.IsDir() && hasGoFiles(prog) {
		return buildPackage(ctx, prog)
	}
	return "", noop, fmt.Errorf("program %q not found in $PATH; give its path (./%s) or a Go package directory", prog, prog)
}

// hasGoFiles reports whether dir holds a non-test .go file.
func hasGoFiles(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}

// buildPackage builds the Go main package in dir into a new temporary
// directory, which cleanup removes.
func buildPackage(ctx context.Context, dir string) (path string, cleanup func(), err error) {
	noop := func() {}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", noop, err
	}
	if !hasGoFiles(abs) {
		return "", noop, fmt.Errorf("program %s is a directory without Go files; give an executable or a Go main package directory", dir)
	}
	tmp, err := os.MkdirTemp("", "oshrun-build-")
	if err != nil {
		return "", noop, fmt.Errorf("building %s: %w", dir, err)
	}
	cleanup = func() { os.RemoveAll(tmp) }
	name := filepath.Base(abs)
	if name == string(filepath.Separator) || name == "." {
		name = "main"
	}
	out := filepath.Join(tmp, name)
	build := exec.CommandContext(ctx, goTool(), "build", "-o", out, ".")
	build.Dir = abs
	if msg, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", noop, fmt.Errorf("building %s with %s: %v\n%s", dir, strings.Join(build.Args, " "), err, strings.TrimRight(string(msg), "\n"))
	}
	return out, cleanup, nil
}

// goTool returns the go command: the one in $PATH, or else the one of
// the toolchain this binary was built with.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}
