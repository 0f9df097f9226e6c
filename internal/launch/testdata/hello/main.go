// Command hello is a test program for launch: it prints which PE it is
// (from the launcher's environment) and its arguments.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Printf("hello from PE %s of %s, args %v\n", os.Getenv("GOSHMEM_PE"), os.Getenv("GOSHMEM_NPES"), os.Args[1:])
}
