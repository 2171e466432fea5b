// Package clitest holds the kplan CLI's test cases and their checks, shared by the
// in-process tests of package cli and the process tests of cmd/kplan: both run every
// case in examples/testdata/cli/cases.txt and compare with the same golden files.
package clitest
