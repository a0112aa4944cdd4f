//go:build unix

package ledger

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lockHolder names the process holding the lock file of the Pebble store
// in pdir, "pid 1234 (dprl agent)", from the lock itself: Pebble locks the
// file with a POSIX record lock, and F_GETLK reports the pid of a process
// holding a conflicting one (nothing is written to the data directory to
// record it). The command is the program's name and the words before its
// first flag, read from /proc where there is one (never its flags, which
// may name secrets). "" when no other process holds the lock or the pid is
// not visible (another pid namespace).
func lockHolder(pdir string) string {
	f, err := os.Open(filepath.Join(pdir, "LOCK"))
	if err != nil {
		return ""
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil || lk.Type == unix.F_UNLCK || lk.Pid <= 0 {
		return ""
	}
	pid := strconv.Itoa(int(lk.Pid))
	if cmd := commandOf(pid); cmd != "" {
		return "pid " + pid + " (" + cmd + ")"
	}
	return "pid " + pid
}

// commandOf is the command of process pid from /proc/PID/cmdline: the
// program's base name and the arguments before the first flag, at most
// four words; "" where /proc is not mounted.
func commandOf(pid string) string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
	if err != nil || len(b) == 0 {
		return ""
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	words := []string{filepath.Base(args[0])}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") || len(words) == 4 {
			break
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}
