// Package doctest holds the tests that compile and run the Go code of the
// documentation: the library example of README.md and every Go block of
// docs/TUTORIAL.md. It has no code of its own; see doctest_test.go for how a
// block is marked and what the test does with it.
package doctest
