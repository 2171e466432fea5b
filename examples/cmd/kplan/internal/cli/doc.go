// Package cli is the kplan planning command: it reads manifests as kubectl prints them,
// calls one kplan planning function and prints the plan as YAML or JSON.
//
// Main is the whole program (cmd/kplan only calls it), so tests run it in-process
// as well as a process.
package cli
