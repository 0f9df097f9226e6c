package wait

// StartWithHook is Start with a hook that Sleep calls right after the
// waiter registers on its doorbell, so that tests can ring in the window
// between registering and sleeping.
func StartWithHook(p *Policy, registered func()) Backoff {
	b := Start(p)
	b.registered = registered
	return b
}
