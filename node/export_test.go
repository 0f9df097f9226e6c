package node

// WithMapFault returns cfg with mapping of the heaps of the PEs for
// which fail returns an error made to fail (tests of the CMA fallback).
func WithMapFault(cfg Config, fail func(pe int) error) Config {
	cfg.mapFault = fail
	return cfg
}
