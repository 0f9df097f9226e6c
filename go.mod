module github.com/goshmem/goshmem

go 1.26.0

require golang.org/x/sys v0.49.0

require github.com/edsrzf/mmap-go v1.2.0
