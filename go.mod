module github.com/goshmem/goshmem

go 1.26.0

require golang.org/x/sys v0.49.0

require (
	github.com/edsrzf/mmap-go v1.2.0
	github.com/intel-go/cpuid v0.0.0-20220614022739-219e067757cb
	github.com/tklauser/numcpus v0.12.0
)
