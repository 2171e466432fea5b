//go:build race

package tmpl

// raceEnabled: the race detector slows execution 5-20x.
const raceEnabled = true
