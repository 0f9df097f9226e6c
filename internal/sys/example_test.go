package sys_test

import (
	"fmt"

	"github.com/goshmem/goshmem/internal/sys"
)

func ExampleSignalName() {
	fmt.Println(sys.SignalName(sys.SIGKILL), sys.SignalName(15), sys.SignalName(200))
	// Output: SIGKILL SIGTERM signal 200
}
