package demo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestNoPolling keeps the drivers free of polling: their waits are on
// sims.Population, the agent's policy announcements and contexts, so the
// package's non-test code calls none of time.Sleep, time.Tick and
// time.NewTicker.
func TestNoPolling(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" {
				switch sel.Sel.Name {
				case "Sleep", "Tick", "NewTicker":
					t.Errorf("%s: time.%s: the demo's drivers must not poll", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
}
