package dsjson

import (
	"os"

	"dprl/internal/fielderr"
)

// ImportArgs are dprl sessions import-dsjson's settings, one field per
// flag: Validate checks them, Run imports In to Out (ImportFile).
type ImportArgs struct {
	In    string `flag:"in" usage:"DSJSON file to read"`
	Out   string `flag:"out" usage:"session log (dprl.sessions.v1) to write"`
	Force bool   `flag:"force" usage:"overwrite --out if it exists"`
	ReaderOptions
}

// ExportArgs are dprl sessions export-dsjson's settings, one field per
// flag: Validate checks them, Run exports In to Out (ExportFile).
type ExportArgs struct {
	In      string `flag:"in" usage:"session log (dprl.sessions.v1) to read"`
	Out     string `flag:"out" usage:"DSJSON file to write"`
	Force   bool   `flag:"force" usage:"overwrite --out if it exists"`
	Actions int    `flag:"actions" usage:"number of discrete actions (every action index must be below it)"`
}

// argFields are the fields the errors of ImportArgs and ExportArgs name
// (*fielderr.Error): the operator's mistakes.
var argFields = fielderr.Fields{"In", "Out", "Force", "Actions"}

// Validate reports a missing In or Out.
func (a ImportArgs) Validate() error {
	if a.In == "" || a.Out == "" {
		return argFields.Errorf("{In} and {Out} are required")
	}
	return nil
}

// Run imports In to Out, refusing an existing Out without Force.
func (a ImportArgs) Run() (ImportStats, error) {
	if err := checkOut(a.Out, a.Force); err != nil {
		return ImportStats{}, err
	}
	return ImportFile(a.In, a.Out, a.ReaderOptions)
}

// Validate reports a missing In or Out, or Actions outside 1 to
// MaxActions.
func (a ExportArgs) Validate() error {
	if a.In == "" || a.Out == "" || a.Actions < 1 || a.Actions > MaxActions {
		return argFields.Errorf("{In}, {Out} and {Actions} (1 to %d) are required", MaxActions)
	}
	return nil
}

// Run exports In to Out, refusing an existing Out without Force.
func (a ExportArgs) Run() (ExportStats, error) {
	if err := checkOut(a.Out, a.Force); err != nil {
		return ExportStats{}, err
	}
	return ExportFile(a.In, a.Out, a.Actions)
}

// checkOut refuses an existing file out without force.
func checkOut(out string, force bool) error {
	if _, err := os.Stat(out); err == nil && !force {
		return argFields.Errorf("{Out} %s exists (pass {Force} to overwrite)", out)
	}
	return nil
}
