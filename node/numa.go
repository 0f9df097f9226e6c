package node

// NUMANode returns the home NUMA node of world PE q: the node its heap
// pages live on and that TeamNUMA and the NUMA level of hierarchical
// collectives group it by; -1 when unknown (a PE not bound inside one
// node). Every PE of the job returns the same for the same q.
func (p *PE) NUMANode(q int) int {
	if q < 0 || q >= p.NPEs() {
		badPE("NUMANode", q, p.NPEs())
	}
	if nodes := p.job.cfg.NUMANodes; nodes != nil {
		return nodes[q]
	}
	return -1
}
