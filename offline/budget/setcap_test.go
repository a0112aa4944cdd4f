package budget

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dprl/internal/fielderr"
	"dprl/ledger"
)

// TestCapArgs: the settings of a cap change are checked before the ledger
// is opened; SetCap finds the dataset of a log's records, says when the
// ledger holds none, and asks for the unit of a dataset with several,
// each error naming its fields.
func TestCapArgs(t *testing.T) {
	dir := t.TempDir()
	log, led := writeLog(t, dir, 3), filepath.Join(dir, "ledger")
	if _, _, err := Run(context.Background(), Config{Ledger: led, Cap: ledger.Cap{Epsilon: 5, Delta: 1e-5}}, Input{Path: log}, &toy{t: t, eps: 1}); err != nil {
		t.Fatal(err)
	}
	braced := func(err error) string {
		return fielderr.Rename(err, func(f string) string { return "{" + f + "}" }).Error()
	}
	all := func(string) bool { return true }
	ok := CapArgs{Data: led, File: log, Epsilon: 7, Delta: 1e-5, Reason: "approved"}
	for _, c := range []struct {
		name string
		args CapArgs
		set  func(string) bool
		want string
	}{
		{"no delta given", ok, func(f string) bool { return f == "Epsilon" }, "give {Data}, {Epsilon}, {Delta}, {Reason} and one of {Dataset} ID"},
		{"dataset and file", func() CapArgs { a := ok; a.Dataset = "x"; return a }(), all, "give {Data}"},
		{"no reason", func() CapArgs { a := ok; a.Reason = " "; return a }(), all, "{Epsilon}, {Delta}, {Reason}: ledger: invalid argument: a cap change needs a reason"},
	} {
		var fe *fielderr.Error
		if _, err := c.args.Change(c.set); !errors.As(err, &fe) || !strings.HasPrefix(braced(err), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	s, err := ledger.Open(led, ledger.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	change, err := ok.Change(all)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ok.SetCap(s, change)
	if err != nil || res.Cap.Epsilon != 7 || res.Old.Epsilon != 5 || !strings.HasPrefix(res.Dataset, "records-sha256:") {
		t.Fatalf("SetCap: %+v, %v", res, err)
	}
	other := filepath.Join(dir, "other")
	os.Mkdir(other, 0o700)
	unknown := ok
	unknown.File = writeLogAt(t, filepath.Join(other, "log.jsonl"), 100, 2)
	if _, err := unknown.SetCap(s, change); err == nil || !strings.HasPrefix(err.Error(), "no dataset for the records of "+unknown.File+" in the ledger "+led) {
		t.Errorf("unknown records: %v", err)
	}
	missing := ok
	missing.File = filepath.Join(dir, "none.jsonl")
	if _, err := missing.SetCap(s, change); err == nil || !strings.HasPrefix(braced(err), "{File} "+missing.File+": ") {
		t.Errorf("missing file: %v", err)
	}
	// A second unit: the change must name one.
	expert := change
	expert.Unit = ledger.UnitExpert
	if _, err := ok.SetCap(s, expert); err != nil {
		t.Fatal(err)
	}
	if _, err := ok.SetCap(s, change); !errors.As(err, new(*ledger.UnitError)) || !strings.HasSuffix(braced(err), "has budgets at units expert, trajectory: give {Unit}") {
		t.Errorf("two units: %v", err)
	}
}
