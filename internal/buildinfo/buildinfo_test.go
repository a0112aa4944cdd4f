package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	i := Get()
	if i.Version == "" || i.Go != runtime.Version() {
		t.Fatalf("Get = %+v", i)
	}
	s := Info{Version: "v1.2.3", Revision: "0123456789abcdef0123", Modified: true, Go: "go1.26"}.String()
	if s != "v1.2.3 (0123456789ab+modified, go1.26)" {
		t.Fatalf("String = %q", s)
	}
	if !strings.Contains(Info{Version: "devel", Go: "go1"}.String(), "unknown revision") {
		t.Fatal("no revision")
	}
}
