//go:build !unix

package service

// fdLimit returns 0 (unknown) where there is no RLIMIT_NOFILE.
func fdLimit() (int, error) { return 0, nil }
