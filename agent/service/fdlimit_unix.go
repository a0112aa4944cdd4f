//go:build unix

package service

import (
	"fmt"
	"math"
	"syscall"
)

// fdLimit returns the process's open-file limit, 0 when unlimited. (Go
// raises the soft limit to the hard one at start-up.)
func fdLimit() (int, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, fmt.Errorf("open-file limit: %w", err)
	}
	if r.Cur > math.MaxInt32 {
		return 0, nil
	}
	return int(r.Cur), nil
}
