package wait_test

import (
	"fmt"
	"time"

	"github.com/goshmem/goshmem/internal/wait"
)

// A wait spins, then yields, then asks to sleep; after each sleep it
// yields a little again before the next one.
func ExampleBackoff_Pause() {
	p := wait.Policy{Spin: 2, Yield: 2, MaxSleep: time.Millisecond}
	b := wait.Start(&p)
	names := map[wait.Phase]string{wait.Spinning: "spin", wait.Yielding: "yield", wait.Sleeping: "sleep"}
	for range 8 {
		fmt.Print(names[b.Pause()], " ")
	}
	fmt.Println()
	// Output: spin spin yield yield sleep yield yield sleep
}

func ExampleAuto() {
	fmt.Printf("%+v\n", wait.Auto(4, 8, wait.Processes))
	fmt.Printf("%+v\n", wait.Auto(16, 8, wait.Processes))
	fmt.Printf("%+v\n", wait.Auto(8, 2, wait.Goroutines))
	// Output:
	// {Spin:32000 Yield:200 ParkYield:-1 Abort:<nil> MaxSleep:10ms MinSleep:0s Mode:processes Fenced:false}
	// {Spin:1 Yield:4000 ParkYield:-1 Abort:<nil> MaxSleep:10ms MinSleep:0s Mode:processes Fenced:false}
	// {Spin:1 Yield:32 ParkYield:1 Abort:<nil> MaxSleep:10ms MinSleep:0s Mode:goroutines Fenced:false}
}
