package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Exists reports whether dir holds a ledger, or what is left of one: its
// store, its user-key secret or its head file. It writes nothing and takes
// no lock, so it may be asked of a ledger another process has open. A
// missing dir holds none.
func Exists(dir string) (bool, error) {
	for _, name := range []string{pebbleDir, userKeyFile, headsFile} {
		_, err := os.Stat(filepath.Join(dir, name))
		switch {
		case err == nil:
			return true, nil
		case !errors.Is(err, fs.ErrNotExist):
			return false, fmt.Errorf("ledger: %w", err)
		}
	}
	return false, nil
}
