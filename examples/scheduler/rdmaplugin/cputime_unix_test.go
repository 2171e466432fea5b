//go:build unix

package rdmaplugin

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the test process has used (user + system, all threads,
// GC included). Benchmarks report it per op beside wall time, because on a shared
// machine wall time mostly measures waiting for a core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
