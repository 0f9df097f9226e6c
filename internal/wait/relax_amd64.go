package wait

// Relax executes one CPU pause instruction: it tells the core that this
// is a spin-wait loop, saving power and the sibling hyperthread's time.
//
//go:noescape
func Relax()
