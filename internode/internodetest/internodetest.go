// Package internodetest has what the tests of internode's backends
// share: an in-memory Exchange that stands in for the launcher's PMI.
package internodetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internode"
)

// Exchange is an in-memory key-value exchange for the leaders of a test
// in one process; View(rank) is one leader's internode.Exchange. As
// under PMI, a key is put once per rank.
type Exchange struct {
	mu      sync.Mutex
	vals    map[string][]byte // "rank/key"
	gets    atomic.Int64
	parties int
	fences  map[int]bool
	fenced  chan struct{}
	// Rewrite, if set, changes what Get returns (e.g. a wrong address).
	Rewrite func(rank int, key string, val []byte) []byte
}

// NewExchange returns an empty exchange. With parties > 0 its Fence is
// PMI's: each rank fences once, and every Fence waits until parties
// ranks have called it (at most 20 s); with 0 Fence returns at once.
func NewExchange(parties int) *Exchange {
	return &Exchange{vals: map[string][]byte{}, parties: parties, fences: map[int]bool{}, fenced: make(chan struct{})}
}

// View returns rank's handle.
func (x *Exchange) View(rank int) internode.Exchange { return view{x, rank} }

// Gets returns how many Get calls were made.
func (x *Exchange) Gets() int64 { return x.gets.Load() }

// Value returns what rank put under key (nil if nothing).
func (x *Exchange) Value(rank int, key string) []byte {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.vals[fmt.Sprint(rank, "/", key)]
}

type view struct {
	x    *Exchange
	rank int
}

func (v view) Put(key string, val []byte) error {
	v.x.mu.Lock()
	defer v.x.mu.Unlock()
	k := fmt.Sprint(v.rank, "/", key)
	if _, ok := v.x.vals[k]; ok {
		return fmt.Errorf("key %s put twice", k)
	}
	v.x.vals[k] = append([]byte(nil), val...)
	return nil
}

func (v view) Fence() error {
	x := v.x
	if x.parties == 0 {
		return nil
	}
	x.mu.Lock()
	if x.fences[v.rank] {
		x.mu.Unlock()
		return fmt.Errorf("rank %d fenced twice: under a launcher every process fences once", v.rank)
	}
	x.fences[v.rank] = true
	if len(x.fences) == x.parties {
		close(x.fenced)
	}
	x.mu.Unlock()
	select {
	case <-x.fenced:
		return nil
	case <-time.After(20 * time.Second):
		return errors.New("fence: the other ranks did not come within 20 s")
	}
}

func (v view) Get(rank int, key string) ([]byte, error) {
	v.x.gets.Add(1)
	v.x.mu.Lock()
	val, ok := v.x.vals[fmt.Sprint(rank, "/", key)]
	rw := v.x.Rewrite
	v.x.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no key %s for rank %d", key, rank)
	}
	if rw != nil {
		val = rw(rank, key, val)
	}
	return val, nil
}
