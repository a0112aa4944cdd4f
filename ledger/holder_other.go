//go:build !unix

package ledger

// lockHolder names the process holding the lock of the store in pdir;
// without POSIX record locks it cannot tell.
func lockHolder(string) string { return "" }

// commandOf names process pid's command; without /proc it cannot tell.
func commandOf(string) string { return "" }
