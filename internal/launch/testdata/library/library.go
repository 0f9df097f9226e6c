// Package library is not a main package: launch tests that running it
// is refused with a message that says so.
package library

// Answer is here so that the package has something to build.
const Answer = 42
