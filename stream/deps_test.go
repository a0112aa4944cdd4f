package stream

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// moduleImports returns the dprl packages imported by the non-test Go files of
// the package at dir (a directory relative to the module root).
func moduleImports(t *testing.T, root, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(p, "dprl/") {
				out = append(out, p)
			}
		}
	}
	return out
}

// TestWireProtocolDoesNotImportSimulators walks the dprl imports of stream's
// non-test files transitively: the wire protocol takes its vocabulary from
// package space, never from the simulators, and space itself imports no other
// dprl package (so the graph stays one-way: sims -> space <- stream).
func TestWireProtocolDoesNotImportSimulators(t *testing.T) {
	root := ".." // the module root, one level above this package
	if got := moduleImports(t, root, "space"); len(got) != 0 {
		t.Errorf("space imports %v, want no dprl package", got)
	}
	seen := map[string]string{"dprl/stream": ""}
	queue := []string{"dprl/stream"}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		for _, dep := range moduleImports(t, root, strings.TrimPrefix(pkg, "dprl/")) {
			if _, ok := seen[dep]; !ok {
				seen[dep] = pkg
				queue = append(queue, dep)
			}
		}
	}
	if via, ok := seen["dprl/sims"]; ok {
		t.Errorf("dprl/stream depends on dprl/sims (imported by %s)", via)
	}
	if _, ok := seen["dprl/space"]; !ok {
		t.Errorf("dprl/stream no longer reaches dprl/space; update this test")
	}
}
