package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/goshmem/goshmem/internal/sys"
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
	if msg, err := goBuild(ctx, abs, out, filepath.Join(tmp, "gotmp")); err != nil {
		cleanup()
		if ctx.Err() != nil {
			return "", noop, fmt.Errorf("building %s: %w", dir, err)
		}
		return "", noop, fmt.Errorf("building %s with go build -o %s: %v\n%s", dir, out, err, strings.TrimRight(msg, "\n"))
	}
	if isArchive(out) {
		// go build -o of a package that is not main writes its archive.
		cleanup()
		return "", noop, fmt.Errorf("program %s is not a main package (go build made a library archive, not a command); give an executable or a Go main package directory", dir)
	}
	return out, cleanup, nil
}

// isArchive reports whether the file at path is an ar archive, what go
// build -o writes for a package that is not main.
func isArchive(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 8)
	n, _ := io.ReadFull(f, magic)
	return string(magic[:n]) == "!<arch>\n"
}

// goBuild runs go build -o out in dir and returns its output. The go
// command runs in a process group of its own, with GOTMPDIR and TMPDIR
// in gotmp (inside the launcher's build directory, so that whatever Go
// leaves there goes with it). When ctx is done first, the whole group -
// go and the compile or link it runs - is killed, and goBuild returns
// only when every process of the group is gone, so that the caller can
// remove the build directory for good.
func goBuild(ctx context.Context, dir, out, gotmp string) (string, error) {
	if err := os.Mkdir(gotmp, 0o700); err != nil {
		return "", err
	}
	var msg bytes.Buffer
	build := &exec.Cmd{
		Path:        goTool(),
		Args:        []string{"go", "build", "-o", out, "."},
		Dir:         dir,
		Env:         append(os.Environ(), "GOTMPDIR="+gotmp, "TMPDIR="+gotmp),
		Stdout:      &msg,
		Stderr:      &msg,
		SysProcAttr: sys.ChildAttr(),
		// A process of the group that survived would hold the output
		// pipe; none does (stopGroups), but never hang on it.
		WaitDelay: time.Second,
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := build.Start(); err != nil {
		return "", err
	}
	pid := build.Process.Pid
	exited := make(chan struct{})
	go func() {
		sys.WaitStatus(pid) // the zombie keeps the group id reserved
		close(exited)
	}()
	var cancelled error
	select {
	case <-exited:
	case <-ctx.Done():
		cancelled = ctx.Err()
		sys.KillGroup(pid, sys.SIGKILL)
		<-exited
	}
	// The compiler or linker may outlive go (killed with it, or left
	// behind): stop and wait for the rest of the group.
	stopGroups(map[int]bool{pid: true}, "", sys.SIGKILL)
	err := build.Wait()
	if cancelled != nil {
		return msg.String(), cancelled
	}
	return msg.String(), err
}

// goTool returns the go command: the one in $PATH, or else the one of
// the toolchain this binary was built with.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}
