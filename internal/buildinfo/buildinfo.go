// Package buildinfo names the running build: the module version (or
// "devel"), the VCS revision and whether the tree was modified, and the Go
// version, as the Go toolchain recorded them in the binary.
package buildinfo

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Info is the build of the running binary.
type Info struct {
	Version  string `json:"version"`            // module version, or "devel"
	Revision string `json:"revision,omitempty"` // VCS revision, when recorded
	Modified bool   `json:"modified,omitempty"` // the tree had uncommitted changes
	Go       string `json:"go"`
}

// Get returns the running binary's build.
func Get() Info {
	info := Info{Version: "devel", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		info.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is "VERSION (REVISION[+modified], GO)", the revision shortened to
// 12 characters.
func (i Info) String() string {
	rev := i.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		rev = "unknown revision"
	}
	if i.Modified {
		rev += "+modified"
	}
	return i.Version + " (" + rev + ", " + i.Go + ")"
}

// WriteText writes "dprl " and String, and a newline.
func (i Info) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "dprl %s\n", i)
	return err
}
