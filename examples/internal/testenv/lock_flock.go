//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package testenv

import (
	"os"
	"syscall"
)

// lock takes an exclusive advisory lock on path, waiting for other holders, and
// returns the function that releases it. The lock dies with the process.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
