//go:build race

package ranktable

// raceEnabled: the race detector slows execution 5-20x.
const raceEnabled = true
