//go:build !unix

package rdmaplugin

import "time"

// processCPU is not measured outside unix; benchmarks then report 0 cpu-ns/op.
func processCPU() time.Duration { return 0 }
