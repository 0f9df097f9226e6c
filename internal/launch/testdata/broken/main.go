// Command broken does not compile: launch tests that a build failure is
// reported.
package main

func main() {
	undefinedFunction()
}
