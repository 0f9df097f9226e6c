package job

import "github.com/goshmem/goshmem/internal/sys"

func signalName(sig int) string { return sys.SignalName(sig) }
