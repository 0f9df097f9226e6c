package osu

import (
	"fmt"

	"github.com/goshmem/goshmem"
)

// Gather is the body shared by the collect and fcollect programs: on
// TeamWorld, every PE contributes size bytes (its letter) and times
// iterations of gather(team, dst[:npes*size], src[:size]) back to back,
// then checks that block j of dst holds PE j's letter. prog names the
// program in the error.
func Gather(prog string, b *Bench, gather func(t *goshmem.Team, dst, src []uint8)) {
	team := goshmem.TeamWorld(b.PE)
	src, dst := b.Buffers(b.N * b.MaxSize)
	Fill(src, byte('A'+b.Me%26)) // block j of dst must hold PE j's letter
	b.Out.Columns(Size, LatencyUs)
	b.Sweep(true, func(size, iters, warm int) float64 {
		d, s := dst[:b.N*size], src[:size]
		lat := Time(warm, iters, func(n int) {
			for range n {
				gather(team, d, s)
			}
		}) / float64(iters)
		for j := range b.N {
			if want := byte('A' + j%26); d[j*size] != want || d[(j+1)*size-1] != want {
				panic(fmt.Sprintf("%s: PE %d: block %d of dst (%d bytes each) does not hold PE %d's data", prog, b.Me, j, size, j))
			}
		}
		return lat
	})
}
