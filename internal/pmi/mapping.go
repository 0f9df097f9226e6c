package pmi

import (
	"fmt"
	"strconv"
	"strings"
)

// maxMappingRanks bounds the ranks a mapping is expanded for: a job of
// more processes than this is not a job this runtime can start anyway.
const maxMappingRanks = 1 << 24

// ParseMapping expands PMI_process_mapping for a job of size ranks into
// the node index of every rank. The value is "(vector,B,B,...)" where
// each block B is "(start,nodes,ranks)": nodes consecutive nodes from
// node start, each taking ranks consecutive ranks. Ranks are given out
// block by block, and the vector repeats from its first block while
// ranks remain (a cyclic placement is "(vector,(0,N,1))"). An empty
// vector "(vector)" or any other form is an error.
func ParseMapping(s string, size int) ([]int, error) {
	if size <= 0 || size > maxMappingRanks {
		return nil, fmt.Errorf("pmi: process mapping for %d ranks: the size must be in [1, %d]", size, maxMappingRanks)
	}
	bad := func(why string) error {
		return fmt.Errorf("pmi: PMI_process_mapping %.80q: %s", s, why)
	}
	t := strings.Join(strings.Fields(s), "")
	rest, ok := strings.CutPrefix(t, "(vector")
	if !ok {
		return nil, bad(`not "(vector,...)"`)
	}
	rest, ok = strings.CutSuffix(rest, ")")
	if !ok {
		return nil, bad("no closing parenthesis")
	}
	type block struct{ start, nodes, ranks int }
	var blocks []block
	for rest != "" {
		r, ok := strings.CutPrefix(rest, ",(")
		if !ok {
			return nil, bad(`expected ",(" before a block`)
		}
		inner, after, ok := strings.Cut(r, ")")
		if !ok {
			return nil, bad("a block without its closing parenthesis")
		}
		parts := strings.Split(inner, ",")
		if len(parts) != 3 {
			return nil, bad("a block without exactly three numbers")
		}
		var v [3]int
		for i, p := range parts {
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n > maxMappingRanks {
				return nil, bad(fmt.Sprintf("block number %q is not in [0, %d]", p, maxMappingRanks))
			}
			v[i] = n
		}
		if v[1] == 0 || v[2] == 0 {
			return nil, bad("a block with no nodes or no ranks per node")
		}
		blocks = append(blocks, block{v[0], v[1], v[2]})
		rest = after
	}
	if len(blocks) == 0 {
		return nil, bad("no blocks")
	}
	nodeOf := make([]int, size)
	rank := 0
	for rank < size {
		for _, b := range blocks {
			for n := 0; n < b.nodes && rank < size; n++ {
				for k := 0; k < b.ranks && rank < size; k++ {
					nodeOf[rank] = b.start + n
					rank++
				}
			}
		}
	}
	return nodeOf, nil
}
