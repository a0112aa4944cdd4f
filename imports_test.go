package dprl_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// layers are the module's import rules (docs/layout.md), from
// the floor up: a package may import the packages of lower layers, and
// those of its own layer in its own top-level directory (internal/chart
// -> internal/atomicfile, policy -> policy/bandmf), never a higher layer
// nor a sibling of its layer in another directory (ledger and policy,
// agent and offline/qlearn, stream and ledger/accountant are siblings).
// A pattern "p/..." names p and every package under it; a package named
// exactly takes precedence.
var layers = []struct {
	name string
	pkgs []string
}{
	{"leaf helpers", []string{"internal/..."}},
	{"vocabulary and samplers", []string{"space", "noise"}},
	{"accounting maths, simulators, session log, wire protocol", []string{"ledger/accountant/...", "sims", "sessionlog", "sessionlog/dsjson", "stream", "stream/updateq"}},
	{"policies and the ledger", []string{"policy", "policy/bandmf", "policy/lincb", "ledger", "ledger/record"}},
	{"policy formats and what builds on policies and the ledger", []string{"policy/qnet", "policy/sac", "profile", "agent/statuspage",
		"offline/budget", "offline/gtd2", "offline/lsw", "offline/ope", "offline/policies"}},
	{"rollout", []string{"rollout"}},
	{"the agent, the offline modes, the load generator", []string{"agent", "offline", "offline/evaluate", "offline/ope/coverage", "offline/primorl", "offline/qlearn", "offline/svt",
		"stream/loadgen"}},
	{"the agent's operator shell and its tests' fixtures", []string{"agent/service", "agent/internal/..."}},
	{"drivers", []string{"audit", "experiment/...", "report"}},
	{"the command and the scripts' tools", []string{"cmd/...", "scripts/..."}},
}

// layerOf returns the layer of pkg (a path relative to the module), or -1.
func layerOf(pkg string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, p := range l.pkgs {
			if p == pkg {
				return i
			}
			if root, ok := strings.CutSuffix(p, "/..."); ok && (pkg == root || strings.HasPrefix(pkg, root+"/")) && len(root) > bestLen {
				best, bestLen = i, len(root)
			}
		}
	}
	return best
}

// family is a package's top-level directory.
func family(pkg string) string {
	top, _, _ := strings.Cut(pkg, "/")
	return top
}

// moduleImports returns, for every package of the module with non-test Go
// files, the module packages its non-test files import (paths relative to
// the module; files of every build constraint; testdata skipped).
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "." && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if dep, ok := strings.CutPrefix(p, "dprl/"); ok && !slices.Contains(out[pkg], dep) {
				out[pkg] = append(out[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportLayers fails when a package imports one the layers forbid, or
// when a package has no layer (add it to layers and to docs/layout.md
// Layout section).
func TestImportLayers(t *testing.T) {
	imports := moduleImports(t)
	if len(imports) < 20 {
		t.Fatalf("found %d packages; is the test run from the module root?", len(imports))
	}
	var pkgs []string
	for pkg := range imports {
		pkgs = append(pkgs, pkg)
	}
	slices.Sort(pkgs)
	for _, pkg := range pkgs {
		li := layerOf(pkg)
		if li < 0 {
			t.Errorf("dprl/%s has no layer: add it to layers (imports_test.go) and to docs/layout.md", pkg)
			continue
		}
		deps := imports[pkg]
		slices.Sort(deps)
		for _, dep := range deps {
			lj := layerOf(dep)
			switch {
			case lj < 0:
				// Reported as a package of its own.
			case lj > li:
				t.Errorf("dprl/%s (%s) imports dprl/%s, a higher layer (%s)", pkg, layers[li].name, dep, layers[lj].name)
			case lj == li && family(dep) != family(pkg):
				t.Errorf("dprl/%s imports dprl/%s, a sibling in its layer (%s) outside %s/", pkg, dep, layers[li].name, family(pkg))
			}
		}
	}
}

// TestLayerRulesBite checks the rule on the imports it must refuse.
func TestLayerRulesBite(t *testing.T) {
	for _, c := range []struct {
		pkg, dep string
		ok       bool
	}{
		{"agent", "offline/qlearn", false},
		{"ledger", "policy/bandmf", false},
		{"stream", "ledger/accountant", false},
		{"agent", "stream/loadgen", false},
		{"internal/statuspage", "ledger", false},
		{"internal/cliflags", "agent", false},
		{"policy", "ledger", false},
		{"policy", "policy/bandmf", true},
		{"ledger", "ledger/accountant/bandsens", true},
		{"offline/qlearn", "policy/qnet", true},
		{"experiment/bench", "stream/loadgen", true},
		{"internal/chart", "internal/atomicfile", true},
		{"agent", "agent/service", false},
		{"agent/service", "agent", true},
		{"experiment/demo", "agent/service", true},
	} {
		li, lj := layerOf(c.pkg), layerOf(c.dep)
		ok := li >= 0 && lj >= 0 && (lj < li || lj == li && family(c.pkg) == family(c.dep))
		if ok != c.ok {
			t.Errorf("%s -> %s allowed %v, want %v", c.pkg, c.dep, ok, c.ok)
		}
	}
}
