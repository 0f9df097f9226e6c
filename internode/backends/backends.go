// Package backends is the table of the internode backends built into
// goshmem, for the core to open the one SHMEM_INTERNODE names. It is a
// function, not a variable: nothing registers itself at init time, and
// a test opens its own table with internode.Open.
package backends

import (
	"github.com/goshmem/goshmem/internode"
	"github.com/goshmem/goshmem/internode/tcp"
	"github.com/goshmem/goshmem/internode/verbs"
)

// Default is the backend used when SHMEM_INTERNODE is not set.
const Default = tcp.Name

// List returns the backends of this build.
func List() []internode.Backend {
	return []internode.Backend{tcp.Backend(), verbs.Backend()}
}

// Open opens the backend called name ("" is Default); an unknown name
// is an error listing the known ones.
func Open(name string, cfg internode.Config) (internode.Transport, error) {
	if name == "" {
		name = Default
	}
	return internode.Open(List(), name, cfg)
}
