//go:build !race

package tmpl

const raceEnabled = false
