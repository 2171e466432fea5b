//go:build !race

package ranktable

const raceEnabled = false
